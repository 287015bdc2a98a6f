// Example 04: pipeline schedules, and where their bubbles come from.
//
// A model cut into p stages runs a batch as m microbatches. A stage cannot start microbatch j
// before the stage in front of it has finished it, so the first and last stages sit idle while
// the pipeline fills and drains: the bubble. The schedules below differ in how they order the
// same work (docs/pipeline.md):
//   GPipe        all forwards, then all backwards; holds activations for all m microbatches
//   1F1B         the same bubble, but a backward as soon as possible: stage i holds at most p - i
//   interleaved  each rank holds v model chunks; chunks are v times shorter, so is the bubble
//   ZB-H1        the backward split into I (input gradient, which the previous stage waits for) and
//                W (weight gradient, which nobody waits for); W's fill the bubbles
// Each schedule is data: a list of actions per rank, which chorus simulates here and which
// chorus::parallel::run_pipeline executes over any communicator.
//
// The example checks the textbook figures and exits non-zero if one does not hold.
#include <chorus/parallel/pipeline_printer.hpp>
#include <chorus/parallel/pipeline_schedule.hpp>
#include <chorus/parallel/pipeline_simulator.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace {

using namespace chorus::parallel;

bool ok = true;

void expect(bool holds, const char* what) {
  if (!holds) {
    std::printf("  NOT AS EXPECTED: %s\n", what);
    ok = false;
  }
}

void show(const char* title, const PipelineSchedule& schedule, const PipelineCosts& costs, double time_per_cell) {
  const PipelineTimeline t = simulate_pipeline(schedule, costs);
  std::printf("%s\n%s", title, format_pipeline_timeline(t, schedule.chunks, time_per_cell).c_str());
  std::printf("  makespan %g, idle per rank %g, bubble fraction %.3f, peak in-flight (per rank):", t.makespan,
              t.idle[0], t.bubble_fraction);
  for (int peak : t.peak_in_flight) std::printf(" %d", peak);
  std::printf("\n\n");
}

}  // namespace

int main() {
  const int p = 4, m = 8, v = 2;
  // One stage's forward takes 1, its backward 2 (a backward computes two gradients: the input's
  // and the weights'). Interleaved chunks hold half the layers, so half the time each.
  const PipelineCosts stage{1, 2, 1, 1};
  const PipelineCosts chunk{0.5, 1, 0.5, 0.5};

  std::printf("p = %d stages, m = %d microbatches; F = forward, B = backward (== still running), blank = idle\n\n", p, m);
  show("GPipe", gpipe_schedule(p, m), stage, 1);
  show("1F1B", one_f_one_b_schedule(p, m), stage, 1);
  show("Interleaved 1F1B, v = 2 chunks per rank (chunk 1 in lower case; one cell = half a unit)",
       interleaved_1f1b_schedule(p, m, v), chunk, 0.5);
  show("ZB-H1: B split into I (input gradient) and W (weight gradient), 1 unit each", zb_h1_schedule(p, m), stage, 1);

  const PipelineTimeline gpipe = simulate_pipeline(gpipe_schedule(p, m), stage);
  const PipelineTimeline one_f_one_b = simulate_pipeline(one_f_one_b_schedule(p, m), stage);
  const PipelineTimeline interleaved = simulate_pipeline(interleaved_1f1b_schedule(p, m, v), chunk);
  const PipelineTimeline zb = simulate_pipeline(zb_h1_schedule(p, m), stage);
  const double textbook = double(p - 1) / (m + p - 1);
  std::printf("Bubble fraction (p-1)/(m+p-1) = %.3f: GPipe %.3f, 1F1B %.3f\n", textbook, gpipe.bubble_fraction,
              one_f_one_b.bubble_fraction);
  std::printf("Idle time per rank: 1F1B %g = (p-1)(F+B); interleaved %g = that / v; ZB-H1 %g = (p-1)(F+I-W)\n",
              one_f_one_b.idle[0], interleaved.idle[0], zb.idle[0]);
  std::printf("Peak in-flight on rank 0: GPipe %d (m), 1F1B %d (p), ZB-H1 %d (p)\n", gpipe.peak_in_flight[0],
              one_f_one_b.peak_in_flight[0], zb.peak_in_flight[0]);
  expect(std::fabs(gpipe.bubble_fraction - textbook) < 1e-12, "GPipe bubble is (p-1)/(m+p-1)");
  expect(std::fabs(one_f_one_b.bubble_fraction - textbook) < 1e-12, "1F1B bubble is (p-1)/(m+p-1)");
  expect(one_f_one_b.idle[0] == (p - 1) * 3.0, "1F1B idles (p-1)(F+B)");
  expect(interleaved.idle[0] == one_f_one_b.idle[0] / v, "interleaving divides the idle time by v");
  expect(zb.idle[0] == (p - 1) * 1.0, "ZB-H1 idles (p-1)(F+I-W), a third of 1F1B's");
  expect(gpipe.peak_in_flight[0] == m && one_f_one_b.peak_in_flight[0] == p && zb.peak_in_flight[0] == p,
         "peak in-flight: GPipe m, 1F1B and ZB-H1 p");
  return ok ? 0 : 1;
}
