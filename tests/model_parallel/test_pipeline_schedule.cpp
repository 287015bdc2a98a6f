// Pipeline schedules as data, checked on paper (no threads): warmup counts, peak in-flight
// microbatches, bubbles, interleaving and zero bubble against the published figures
// (docs/pipeline.md, docs/references.md), sends paired with receives in a deadlock-free order, bad requests.
#include <catch2/catch.hpp>

#include <chorus/parallel/pipeline_communication.hpp>
#include <chorus/parallel/pipeline_printer.hpp>
#include <chorus/parallel/pipeline_schedule.hpp>
#include <chorus/parallel/pipeline_simulator.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace test_pipeline_schedule {

using namespace chorus::parallel;

namespace {

const PipelineKind kKinds[] = {PipelineKind::gpipe, PipelineKind::one_f_one_b, PipelineKind::interleaved_1f1b,
                               PipelineKind::zb_h1};

// Forwards a rank runs before its first backward (B or I): the warmup and, when there is a steady
// phase, its first forward.
int forwards_before_backward(const std::vector<PipelineAction>& list) {
  int n = 0;
  for (const PipelineAction& a : list) {
    if (a.op == PipelineOp::backward || a.op == PipelineOp::backward_input) break;
    n += a.op == PipelineOp::forward;
  }
  return n;
}

// The plainest lowering: receive right before use, send right after producing. It deadlocks
// with synchronous sends; the tests show that the verifier sees it.
PipelineSchedule naive_communication(const PipelineSchedule& s) {
  PipelineSchedule out = s;
  for (int r = 0; r < s.stages; ++r) {
    auto& list = out.actions[static_cast<std::size_t>(r)];
    list.clear();
    for (const PipelineAction& a : s.actions[static_cast<std::size_t>(r)]) {
      const bool f = a.op == PipelineOp::forward;
      if (f && r > 0) list.push_back({PipelineOp::recv_activation, a.microbatch, 0, r - 1});
      if (!f && r < s.stages - 1) list.push_back({PipelineOp::recv_gradient, a.microbatch, 0, r + 1});
      list.push_back(a);
      if (f && r < s.stages - 1) list.push_back({PipelineOp::send_activation, a.microbatch, 0, r + 1});
      if (!f && r > 0) list.push_back({PipelineOp::send_gradient, a.microbatch, 0, r - 1});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("1F1B warms up with min(p-i-1, m) forwards and holds at most min(p-i, m)", "[pipeline]") {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 4 * p; ++m) {
      const PipelineSchedule s = one_f_one_b_schedule(p, m);
      const PipelineTimeline t = simulate_pipeline(s);
      for (int i = 0; i < p; ++i) {
        INFO("p=" << p << " m=" << m << " stage " << i);
        const int warmup = std::min(p - i - 1, m);
        CHECK(forwards_before_backward(s.actions[static_cast<std::size_t>(i)]) == warmup + (warmup < m));
        CHECK(one_f_one_b_warmup(p, i, m) == std::min(p - i - 1, m));
        CHECK(t.peak_in_flight[static_cast<std::size_t>(i)] == std::min(p - i, m));
      }
    }
  }
}

TEST_CASE("GPipe holds all m microbatches; GPipe and 1F1B bubbles are (p-1)/(m+p-1)", "[pipeline]") {
  for (const PipelineCosts costs : {PipelineCosts{1, 1, 1, 1}, PipelineCosts{1, 2, 1, 1}, PipelineCosts{3, 5, 1, 1}}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p; ++m) {
        for (const PipelineSchedule& s : {gpipe_schedule(p, m), one_f_one_b_schedule(p, m)}) {
          INFO(to_string(s.kind) << " p=" << p << " m=" << m << " F=" << costs.forward << " B=" << costs.backward);
          const PipelineTimeline t = simulate_pipeline(s, costs);
          const double tf_tb = costs.forward + costs.backward;
          CHECK(t.makespan == Approx((m + p - 1) * tf_tb));
          CHECK(t.bubble_fraction == Approx(double(p - 1) / (m + p - 1)));
          for (int i = 0; i < p; ++i) CHECK(t.idle[static_cast<std::size_t>(i)] == Approx((p - 1) * tf_tb));
          if (s.kind == PipelineKind::gpipe) CHECK(t.peak_in_flight == std::vector<int>(static_cast<std::size_t>(p), m));
        }
      }
    }
  }
}

TEST_CASE("interleaving v chunks divides the idle time by v", "[pipeline]") {
  for (int p = 1; p <= 8; ++p) {
    for (int m = p; m <= 4 * p; m += p) {
      for (int v = 2; v <= 4; ++v) {
        INFO("p=" << p << " m=" << m << " v=" << v);
        const PipelineSchedule s = interleaved_1f1b_schedule(p, m, v);
        // A chunk is 1/v of a stage: chunk costs 1, stage costs v.
        const PipelineTimeline chunked = simulate_pipeline(s, {1, 1, 1, 1});
        const PipelineTimeline plain = simulate_pipeline(one_f_one_b_schedule(p, m), {double(v), double(v), 1, 1});
        CHECK(chunked.makespan == Approx(2.0 * m * v + 2.0 * (p - 1)));
        for (int i = 0; i < p; ++i) {
          CHECK(chunked.idle[static_cast<std::size_t>(i)] == Approx(plain.idle[static_cast<std::size_t>(i)] / v));
          // Megatron's warmup: 2(p-i-1) + (v-1)p forwards, at most all m*v; then the steady
          // phase's first forward, if there is one, also precedes the first backward.
          const int warmup = std::min(2 * (p - i - 1) + (v - 1) * p, m * v);
          CHECK(forwards_before_backward(s.actions[static_cast<std::size_t>(i)]) == warmup + (warmup < m * v));
        }
      }
    }
  }
}

TEST_CASE("ZB-H1 idles p-1 per stage with unit F, I, W: a third of 1F1B's, at 1F1B's peak", "[pipeline]") {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 4 * p; ++m) {
      INFO("p=" << p << " m=" << m);
      const PipelineSchedule zb = zb_h1_schedule(p, m);
      const PipelineTimeline z = simulate_pipeline(zb, {1, 2, 1, 1});
      const PipelineTimeline o = simulate_pipeline(one_f_one_b_schedule(p, m), {1, 2, 1, 1});  // B = I + W
      const int one_f_one_b_peak = *std::max_element(o.peak_in_flight.begin(), o.peak_in_flight.end());
      for (int i = 0; i < p; ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (m >= p) {
          CHECK(z.idle[u] == Approx(p - 1));
          CHECK(o.idle[u] == Approx(3 * (p - 1)));
        } else {
          CHECK(z.idle[u] <= o.idle[u]);
        }
        // W frees a microbatch, I does not: deferring W lets every stage hold stage 0's min(p, m).
        CHECK(z.peak_in_flight[u] == std::min(p, m));
        // Every W after its own I.
        std::vector<bool> input_done(static_cast<std::size_t>(m), false);
        for (const PipelineAction& a : zb.actions[u]) {
          if (a.op == PipelineOp::backward_input) input_done[static_cast<std::size_t>(a.microbatch)] = true;
          if (a.op == PipelineOp::backward_weight) CHECK(input_done[static_cast<std::size_t>(a.microbatch)]);
        }
      }
      CHECK(*std::max_element(z.peak_in_flight.begin(), z.peak_in_flight.end()) == one_f_one_b_peak);
    }
  }
}

TEST_CASE("every send meets its recv, and synchronous sends cannot deadlock", "[pipeline]") {
  for (PipelineKind kind : kKinds) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p; ++m) {
        for (int v : {1, 2, 3}) {
          if ((kind == PipelineKind::interleaved_1f1b) != (v > 1) || (v > 1 && m % p != 0)) continue;
          INFO(to_string(kind) << " p=" << p << " m=" << m << " v=" << v);
          const PipelineSchedule compute = make_pipeline_schedule(kind, p, m, v);
          for (const PipelineCosts costs : {PipelineCosts{}, PipelineCosts{1, 2, 1, 1}, PipelineCosts{2, 3, 2, 1}}) {
            const PipelineSchedule s = with_communication(compute, costs);
            CHECK_NOTHROW(verify_pipeline_communication(s));
            int sends = 0, recvs = 0;
            for (const auto& list : s.actions) {
              for (const PipelineAction& a : list) {
                sends += a.op == PipelineOp::send_activation || a.op == PipelineOp::send_gradient;
                recvs += a.op == PipelineOp::recv_activation || a.op == PipelineOp::recv_gradient;
              }
            }
            CHECK(sends == (p > 1 ? 2 * m * (p * v - 1) : 0));
            CHECK(recvs == sends);
            // The compute order is untouched.
            for (int r = 0; r < p; ++r) {
              std::vector<PipelineAction> kept;
              for (const PipelineAction& a : s.actions[static_cast<std::size_t>(r)]) {
                if (is_compute(a.op)) kept.push_back(a);
              }
              CHECK(kept == compute.actions[static_cast<std::size_t>(r)]);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("the verifier catches a deadlock, a mismatched transfer and a tensor used before it arrives", "[pipeline]") {
  // 1F1B steady state: stage 0 sends activation 1 while stage 1 sends gradient 0; both wait.
  CHECK_THROWS_WITH(verify_pipeline_communication(naive_communication(one_f_one_b_schedule(2, 2))),
                    Catch::Contains("deadlock") && Catch::Contains("rank 0 SEND_F1>1") &&
                        Catch::Contains("rank 1 SEND_B0>0"));
  PipelineSchedule swapped = with_communication(gpipe_schedule(2, 2));
  auto& list = swapped.actions[1];
  auto first = std::find_if(list.begin(), list.end(), [](const PipelineAction& a) { return a.op == PipelineOp::recv_activation; });
  first->microbatch = 1;
  CHECK_THROWS_WITH(verify_pipeline_communication(swapped), Catch::Contains("not the same tensor"));
  PipelineSchedule late = with_communication(gpipe_schedule(2, 1));  // rank 1: RECV_F0<0 F0 B0 SEND_B0>0
  std::swap(late.actions[1][0], late.actions[1][1]);
  CHECK_THROWS_WITH(verify_pipeline_communication(late), Catch::Contains("rank 1 F0 comes before"));
}

TEST_CASE("the simulator refuses a schedule that cannot finish or is incomplete", "[pipeline]") {
  PipelineSchedule s = one_f_one_b_schedule(2, 2);
  std::swap(s.actions[0][0], s.actions[0].back());  // B1 before anything on stage 0
  CHECK_THROWS_WITH(simulate_pipeline(s), Catch::Contains("not progressing") && Catch::Contains("rank 0 at B1"));
  PipelineSchedule missing = gpipe_schedule(2, 2);
  missing.actions[1].pop_back();
  CHECK_THROWS_WITH(simulate_pipeline(missing), Catch::Contains("rank 1") && Catch::Contains("0 B"));
  CHECK_THROWS_WITH(simulate_pipeline(gpipe_schedule(2, 2), {1, 0, 1, 1}), Catch::Contains("B costs 0"));
}

TEST_CASE("impossible requests throw chorus::Error naming the call and the value", "[pipeline]") {
  CHECK_THROWS_AS(one_f_one_b_schedule(4, 0), chorus::Error);
  CHECK_THROWS_WITH(one_f_one_b_schedule(4, 0), Catch::Contains("one_f_one_b_schedule") && Catch::Contains("microbatches = 0"));
  CHECK_THROWS_WITH(gpipe_schedule(0, 4), Catch::Contains("gpipe_schedule") && Catch::Contains("stages = 0"));
  CHECK_THROWS_WITH(zb_h1_schedule(-1, 4), Catch::Contains("stages = -1"));
  CHECK_THROWS_WITH(interleaved_1f1b_schedule(4, 6, 2),
                    Catch::Contains("interleaved_1f1b_schedule") && Catch::Contains("microbatches = 6") &&
                        Catch::Contains("not a multiple of stages = 4"));
  CHECK_THROWS_WITH(interleaved_1f1b_schedule(4, 2, 2), Catch::Contains("microbatches = 2"));  // m < p
  CHECK_THROWS_WITH(interleaved_1f1b_schedule(4, 8, 1), Catch::Contains("chunks = 1"));
  CHECK_THROWS_WITH(one_f_one_b_schedule(4, 1 << 30), Catch::Contains("too large"));
  CHECK_THROWS_WITH(with_communication(with_communication(gpipe_schedule(2, 2))), Catch::Contains("already"));
}

TEST_CASE("actions print as issue 9's names and timelines as ASCII", "[pipeline]") {
  CHECK(to_string(PipelineAction{PipelineOp::forward, 3}) == "F3");
  CHECK(to_string(PipelineAction{PipelineOp::backward, 3, 1}, true) == "1.B3");
  CHECK(to_string(PipelineAction{PipelineOp::send_gradient, 0, 0, 2}) == "SEND_B0>2");
  CHECK(to_string(PipelineKind::zb_h1) == std::string("zb-h1"));
  CHECK(format_pipeline_timeline(simulate_pipeline(one_f_one_b_schedule(2, 3), {1, 2, 1, 1})) ==
        "rank 0 |F0F1    B0==F2B1==  B2==|\n"
        "rank 1 |  F0B0==F1B1==F2B2==    |\n");
  CHECK(format_pipeline_timeline(simulate_pipeline(interleaved_1f1b_schedule(1, 1, 2)), 2) == "rank 0 |F0f0b0B0|\n");
}

}  // namespace test_pipeline_schedule
