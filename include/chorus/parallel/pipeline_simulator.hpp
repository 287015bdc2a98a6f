// Runs a pipeline schedule on paper: every compute action starts when its rank is free and its
// inputs exist (the previous virtual stage's F for an F; the next virtual stage's B or I for a B
// or I; this stage's I for a W), and lasts its cost. Transfers are free and buffered, as in the
// papers' bubble analysis; send and recv actions in a schedule are ignored.
//
// What it reports (docs/pipeline.md): makespan, busy and idle time per rank, the bubble fraction
// (idle / (p * makespan): GPipe and 1F1B give (p - 1)/(m + p - 1)), and the peak number of
// microbatches each rank holds activations for (F done, last backward action not yet done:
// B, or W for zero-bubble schedules). A schedule whose order cannot finish (a rank waits for
// something that its peers only produce after waiting for it) throws chorus::Error naming the
// stuck actions, as torch.distributed.pipelining's "Schedule is not progressing".
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "pipeline_schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

// Time of one action on one chunk. For an interleaved schedule, give the per-chunk cost (a chunk
// is 1/v of a stage's layers) to compare it with a non-interleaved one.
struct PipelineCosts {
  double forward = 1;
  double backward = 1;
  double backward_input = 1;
  double backward_weight = 1;

  double of(PipelineOp op) const {
    switch (op) {
      case PipelineOp::forward: return forward;
      case PipelineOp::backward: return backward;
      case PipelineOp::backward_input: return backward_input;
      case PipelineOp::backward_weight: return backward_weight;
      default: return 0;
    }
  }
};

struct TimedAction {
  PipelineAction action;
  double start;
  double end;
};

struct PipelineTimeline {
  std::vector<std::vector<TimedAction>> ranks;  // compute actions only, in each rank's order
  double makespan = 0;
  std::vector<double> busy;  // per rank
  std::vector<double> idle;  // per rank: makespan - busy
  double bubble_fraction = 0;
  std::vector<int> peak_in_flight;  // per rank, counting (chunk, microbatch) pairs
};

namespace detail {

// One slot per (virtual stage, microbatch) for each op: the time it ended, or -1 while not run.
class PipelineDone {
 public:
  explicit PipelineDone(const PipelineSchedule& s)
      : microbatches_(s.microbatches), end_(4 * static_cast<std::size_t>(s.virtual_stages()) * s.microbatches, -1.0) {}
  double& at(PipelineOp op, int virtual_stage, int microbatch) {
    const std::size_t slot = static_cast<std::size_t>(op);
    return end_[(slot * (end_.size() / 4)) + static_cast<std::size_t>(virtual_stage) * microbatches_ +
                static_cast<std::size_t>(microbatch)];
  }

 private:
  std::size_t microbatches_;
  std::vector<double> end_;
};

inline void check_pipeline_actions(const PipelineSchedule& s) {
  const char* call = "simulate_pipeline";
  if (static_cast<int>(s.actions.size()) != s.stages) {
    throw pipeline_error(call, "the schedule has ", s.actions.size(), " action lists for ", s.stages, " stages");
  }
  // Every (chunk, microbatch) of every rank: one F, and one B or one I and one W.
  const std::size_t slots = static_cast<std::size_t>(s.chunks) * s.microbatches;
  for (int r = 0; r < s.stages; ++r) {
    std::vector<int> count(4 * slots, 0);
    for (const PipelineAction& a : s.actions[static_cast<std::size_t>(r)]) {
      if (a.microbatch < 0 || a.microbatch >= s.microbatches || a.chunk < 0 || a.chunk >= s.chunks) {
        throw pipeline_error(call, "rank ", r, " has action ", to_string(a, true), " outside ", s.chunks, " chunks x ",
                             s.microbatches, " microbatches");
      }
      if (is_compute(a.op)) {
        ++count[static_cast<std::size_t>(a.op) * slots + static_cast<std::size_t>(a.chunk) * s.microbatches +
                static_cast<std::size_t>(a.microbatch)];
      }
    }
    for (std::size_t i = 0; i < slots; ++i) {
      const int f = count[i], b = count[slots + i], in = count[2 * slots + i], w = count[3 * slots + i];
      const bool whole = b == 1 && in == 0 && w == 0;
      const bool split = b == 0 && in == 1 && w == 1;
      if (f != 1 || !(whole || split)) {
        throw pipeline_error(call, "rank ", r, " chunk ", i / s.microbatches, " microbatch ", i % s.microbatches,
                             " has ", f, " F, ", b, " B, ", in, " I, ", w, " W (needs one F and one B, or one I and one W)");
      }
    }
  }
}

}  // namespace detail

inline PipelineTimeline simulate_pipeline(const PipelineSchedule& s, const PipelineCosts& costs = {}) {
  detail::check_pipeline_actions(s);
  for (PipelineOp op : {PipelineOp::forward, PipelineOp::backward, PipelineOp::backward_input, PipelineOp::backward_weight}) {
    if (!(costs.of(op) > 0)) throw detail::pipeline_error("simulate_pipeline", op_letter(op), " costs ", costs.of(op), ", must be > 0");
  }
  const auto p = static_cast<std::size_t>(s.stages);
  const int last = s.virtual_stages() - 1;
  detail::PipelineDone done(s);
  PipelineTimeline t;
  t.ranks.resize(p);
  std::vector<std::size_t> next(p, 0);  // index into each rank's list
  std::vector<double> free_at(p, 0.0);

  // When `a` on `rank` may start, or -1 while an input is missing.
  auto ready = [&](int rank, const PipelineAction& a) -> double {
    const int vs = s.virtual_stage(rank, a.chunk);
    double at = 0;
    auto need = [&](double end) { at = (end < 0 || at < 0) ? -1 : std::max(at, end); };
    switch (a.op) {
      case PipelineOp::forward:
        if (vs > 0) need(done.at(PipelineOp::forward, vs - 1, a.microbatch));
        break;
      case PipelineOp::backward:
      case PipelineOp::backward_input:
        need(done.at(PipelineOp::forward, vs, a.microbatch));
        if (vs < last) {
          const double b = done.at(PipelineOp::backward, vs + 1, a.microbatch);
          need(b >= 0 ? b : done.at(PipelineOp::backward_input, vs + 1, a.microbatch));
        }
        break;
      case PipelineOp::backward_weight:
        need(done.at(PipelineOp::backward_input, vs, a.microbatch));
        break;
      default: break;
    }
    return at;
  };

  std::size_t remaining = 0;
  for (const auto& list : s.actions) remaining += list.size();
  while (remaining > 0) {
    bool progressed = false;
    for (std::size_t r = 0; r < p; ++r) {
      const auto& list = s.actions[r];
      while (next[r] < list.size()) {
        const PipelineAction& a = list[next[r]];
        if (is_compute(a.op)) {
          const double inputs = ready(static_cast<int>(r), a);
          if (inputs < 0) break;
          const double start = std::max(free_at[r], inputs);
          free_at[r] = start + costs.of(a.op);
          done.at(a.op, s.virtual_stage(static_cast<int>(r), a.chunk), a.microbatch) = free_at[r];
          t.ranks[r].push_back({a, start, free_at[r]});
        }
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string stuck;
      for (std::size_t r = 0; r < p; ++r) {
        if (next[r] < s.actions[r].size()) {
          stuck += chorus::detail::concat(stuck.empty() ? "" : ", ", "rank ", r, " at ",
                                          to_string(s.actions[r][next[r]], s.chunks > 1));
        }
      }
      throw detail::pipeline_error("simulate_pipeline", "the schedule is not progressing: ", stuck);
    }
  }

  for (std::size_t r = 0; r < p; ++r) t.makespan = std::max(t.makespan, free_at[r]);
  double idle_total = 0;
  for (std::size_t r = 0; r < p; ++r) {
    double busy = 0;
    int held = 0, peak = 0;
    for (const TimedAction& ta : t.ranks[r]) {
      busy += ta.end - ta.start;
      if (ta.action.op == PipelineOp::forward) peak = std::max(peak, ++held);
      if (ta.action.op == PipelineOp::backward || ta.action.op == PipelineOp::backward_weight) --held;
    }
    t.busy.push_back(busy);
    t.idle.push_back(t.makespan - busy);
    t.peak_in_flight.push_back(peak);
    idle_total += t.makespan - busy;
  }
  t.bubble_fraction = idle_total / (static_cast<double>(p) * t.makespan);
  return t;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
