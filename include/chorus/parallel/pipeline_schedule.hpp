// Pipeline schedules as data (docs/pipeline.md): for every pipeline rank, the ordered list of what
// it computes: F (forward), B (full backward) or, for zero-bubble schedules, I (input gradient) and
// W (weight gradient), each for one microbatch of one model chunk. The same value is simulated
// (pipeline_simulator.hpp), given its sends and receives (pipeline_communication.hpp), printed
// (pipeline_printer.hpp) and run over a communicator (pipeline_executor.hpp).
//
// Virtual stages: with v chunks per rank, chunk c of rank r is virtual stage c*p + r (Megatron's
// round-robin: p=4, v=2 puts model chunks 0 and 4 on rank 0), so activations go r -> r+1 and from
// the last rank back to rank 0 between chunks. Without interleaving v = 1 and stage == rank.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

enum class PipelineOp : std::uint8_t {
  forward,          // F
  backward,         // B: input and weight gradient together
  backward_input,   // I: the input gradient, which the previous stage waits for
  backward_weight,  // W: the weight gradient, which nobody waits for (zero bubble defers it)
  send_activation,  // after F, to the next virtual stage
  recv_activation,  // before F, from the previous virtual stage
  send_gradient,    // after B or I, to the previous virtual stage
  recv_gradient,    // before B or I, from the next virtual stage
};

inline bool is_compute(PipelineOp op) { return op <= PipelineOp::backward_weight; }

struct PipelineAction {
  PipelineOp op;
  int microbatch;
  int chunk = 0;  // model chunk on this rank (interleaved schedules); 0 otherwise
  int peer = -1;  // send and recv: the other rank
};

inline bool operator==(const PipelineAction& a, const PipelineAction& b) {
  return a.op == b.op && a.microbatch == b.microbatch && a.chunk == b.chunk && a.peer == b.peer;
}
inline bool operator!=(const PipelineAction& a, const PipelineAction& b) { return !(a == b); }

enum class PipelineKind : std::uint8_t { gpipe, one_f_one_b, interleaved_1f1b, zb_h1 };

inline const char* to_string(PipelineKind kind) {
  switch (kind) {
    case PipelineKind::gpipe: return "gpipe";
    case PipelineKind::one_f_one_b: return "1f1b";
    case PipelineKind::interleaved_1f1b: return "interleaved";
    case PipelineKind::zb_h1: return "zb-h1";
  }
  return "unknown";
}

inline const char* op_letter(PipelineOp op) {
  switch (op) {
    case PipelineOp::forward: return "F";
    case PipelineOp::backward: return "B";
    case PipelineOp::backward_input: return "I";
    case PipelineOp::backward_weight: return "W";
    case PipelineOp::send_activation: return "SEND_F";
    case PipelineOp::recv_activation: return "RECV_F";
    case PipelineOp::send_gradient: return "SEND_B";
    case PipelineOp::recv_gradient: return "RECV_B";
  }
  return "?";
}

// "F3", "1.B3" for chunk 1 of an interleaved schedule (issue 9's JSON names), "SEND_F3>2" (to rank 2),
// "RECV_B3<2" (from rank 2).
inline std::string to_string(const PipelineAction& action, bool show_chunk = false) {
  std::string text = show_chunk ? std::to_string(action.chunk) + "." : std::string();
  text += op_letter(action.op) + std::to_string(action.microbatch);
  if (action.op == PipelineOp::send_activation || action.op == PipelineOp::send_gradient) {
    text += ">" + std::to_string(action.peer);
  } else if (action.op == PipelineOp::recv_activation || action.op == PipelineOp::recv_gradient) {
    text += "<" + std::to_string(action.peer);
  }
  return text;
}

struct PipelineSchedule {
  PipelineKind kind = PipelineKind::one_f_one_b;
  int stages = 1;        // p: pipeline ranks
  int microbatches = 1;  // m
  int chunks = 1;        // v: model chunks per rank
  std::vector<std::vector<PipelineAction>> actions;  // [rank]: in the order the rank runs them

  int virtual_stages() const { return stages * chunks; }
  int virtual_stage(int rank, int chunk) const { return chunk * stages + rank; }
  int rank_of(int virtual_stage) const { return virtual_stage % stages; }
  int chunk_of(int virtual_stage) const { return virtual_stage / stages; }
  bool splits_backward() const { return kind == PipelineKind::zb_h1; }
};

namespace detail {

template <class... Parts>
Error pipeline_error(const char* call, const Parts&... parts) {
  return Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::parallel::", call, ": ", parts...));
}

// A schedule is a few actions per microbatch and stage; far beyond any real pipeline it is a
// mistake (a garbage count) rather than a request worth allocating gigabytes for.
inline void check_pipeline_shape(const char* call, int stages, int microbatches, int chunks) {
  if (stages < 1) throw pipeline_error(call, "stages = ", stages, ", must be at least 1");
  if (microbatches < 1) throw pipeline_error(call, "microbatches = ", microbatches, ", must be at least 1");
  if (chunks < 1) throw pipeline_error(call, "chunks = ", chunks, ", must be at least 1");
  const long long actions = 3LL * stages * microbatches * chunks;
  if (stages > 4096 || microbatches > (1 << 20) || chunks > 64 || actions > (1LL << 26)) {
    throw pipeline_error(call, "stages = ", stages, ", microbatches = ", microbatches, ", chunks = ", chunks,
                         " is too large a schedule (at most 4096 stages, 2^20 microbatches, 64 chunks)");
  }
}

inline PipelineSchedule empty_pipeline(PipelineKind kind, int stages, int microbatches, int chunks) {
  PipelineSchedule schedule;
  schedule.kind = kind;
  schedule.stages = stages;
  schedule.microbatches = microbatches;
  schedule.chunks = chunks;
  schedule.actions.resize(static_cast<std::size_t>(stages));
  return schedule;
}

}  // namespace detail

// 1F1B's warmup on stage i (Megatron): forwards before the first backward, min(p - i - 1, m).
inline int one_f_one_b_warmup(int stages, int stage, int microbatches) {
  return std::min(stages - stage - 1, microbatches);
}

// GPipe (fill, then drain): every forward, then every backward. Peak activations: all m.
inline PipelineSchedule gpipe_schedule(int stages, int microbatches) {
  detail::check_pipeline_shape("gpipe_schedule", stages, microbatches, 1);
  PipelineSchedule schedule = detail::empty_pipeline(PipelineKind::gpipe, stages, microbatches, 1);
  for (auto& list : schedule.actions) {
    for (int mb = 0; mb < microbatches; ++mb) list.push_back({PipelineOp::forward, mb});
    for (int mb = 0; mb < microbatches; ++mb) list.push_back({PipelineOp::backward, mb});
  }
  return schedule;
}

// 1F1B (PipeDream-Flush, Megatron's default): warmup forwards, then one forward and one backward
// in turn, then the remaining backwards. Same bubble as GPipe, at most p - i microbatches held.
// m < p is allowed (as in Megatron): the warmup is then cut to m.
inline PipelineSchedule one_f_one_b_schedule(int stages, int microbatches) {
  detail::check_pipeline_shape("one_f_one_b_schedule", stages, microbatches, 1);
  PipelineSchedule schedule = detail::empty_pipeline(PipelineKind::one_f_one_b, stages, microbatches, 1);
  for (int i = 0; i < stages; ++i) {
    auto& list = schedule.actions[static_cast<std::size_t>(i)];
    const int warmup = one_f_one_b_warmup(stages, i, microbatches);
    for (int mb = 0; mb < warmup; ++mb) list.push_back({PipelineOp::forward, mb});
    for (int k = 0; k < microbatches - warmup; ++k) {
      list.push_back({PipelineOp::forward, warmup + k});
      list.push_back({PipelineOp::backward, k});
    }
    for (int mb = microbatches - warmup; mb < microbatches; ++mb) list.push_back({PipelineOp::backward, mb});
  }
  return schedule;
}

// Interleaved 1F1B (Megatron's virtual pipeline): v chunks per rank, microbatches taken in groups
// of p through every chunk (depth first), warmup 2(p - i - 1) + (v - 1)p forwards. Each chunk's
// compute is 1/v of a stage's, so the bubble shrinks to (p - 1)/(v m); p2p traffic grows v times.
// Megatron requires m to be a multiple of p (microbatch_group_size_per_vp_stage = p); so does this.
inline PipelineSchedule interleaved_1f1b_schedule(int stages, int microbatches, int chunks) {
  const char* call = "interleaved_1f1b_schedule";
  detail::check_pipeline_shape(call, stages, microbatches, chunks);
  if (chunks < 2) throw detail::pipeline_error(call, "chunks = ", chunks, ", interleaving needs at least 2 (1F1B is v = 1)");
  if (microbatches % stages != 0) {
    throw detail::pipeline_error(call, "microbatches = ", microbatches, " is not a multiple of stages = ", stages,
                                 " (Megatron's interleaved schedule requires it)");
  }
  PipelineSchedule schedule = detail::empty_pipeline(PipelineKind::interleaved_1f1b, stages, microbatches, chunks);
  const int total = microbatches * chunks;
  const int group = stages * chunks;  // virtual microbatches in one round of p microbatches
  // k-th forward / backward of a rank: microbatch and chunk (backwards run the chunks in reverse).
  auto nth = [&](int k, bool backward) {
    const int in_group = k % group;
    const int chunk = in_group / stages;
    return PipelineAction{backward ? PipelineOp::backward : PipelineOp::forward, (k / group) * stages + k % stages,
                          backward ? chunks - 1 - chunk : chunk};
  };
  for (int i = 0; i < stages; ++i) {
    auto& list = schedule.actions[static_cast<std::size_t>(i)];
    const int warmup = std::min(2 * (stages - i - 1) + (chunks - 1) * stages, total);
    for (int k = 0; k < warmup; ++k) list.push_back(nth(k, false));
    for (int k = 0; k < total - warmup; ++k) {
      list.push_back(nth(warmup + k, false));
      list.push_back(nth(k, true));
    }
    for (int k = total - warmup; k < total; ++k) list.push_back(nth(k, true));
  }
  return schedule;
}

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism"): backward split into I and W. Each stage
// keeps 1F1B's warmup and its F/I rhythm, but defers W: stage i runs its first i steady steps
// without one, which lets the later stages fill their cooldown bubbles with W's instead of
// waiting. With F = I = W the idle time per stage drops from 1F1B's 3(p - 1) to about p - 1, while
// no stage ever holds more than p microbatches (1F1B's peak, on stage 0).
inline PipelineSchedule zb_h1_schedule(int stages, int microbatches) {
  detail::check_pipeline_shape("zb_h1_schedule", stages, microbatches, 1);
  PipelineSchedule schedule = detail::empty_pipeline(PipelineKind::zb_h1, stages, microbatches, 1);
  for (int i = 0; i < stages; ++i) {
    auto& list = schedule.actions[static_cast<std::size_t>(i)];
    const int warmup = one_f_one_b_warmup(stages, i, microbatches);
    int next_w = 0;
    for (int mb = 0; mb < warmup; ++mb) list.push_back({PipelineOp::forward, mb});
    for (int k = 0; k < microbatches - warmup; ++k) {
      list.push_back({PipelineOp::forward, warmup + k});
      list.push_back({PipelineOp::backward_input, k});
      if (k >= i) list.push_back({PipelineOp::backward_weight, next_w++});
    }
    for (int mb = microbatches - warmup; mb < microbatches; ++mb) {
      list.push_back({PipelineOp::backward_input, mb});
      list.push_back({PipelineOp::backward_weight, next_w++});
    }
    while (next_w < microbatches) list.push_back({PipelineOp::backward_weight, next_w++});
  }
  return schedule;
}

inline PipelineSchedule make_pipeline_schedule(PipelineKind kind, int stages, int microbatches, int chunks = 1) {
  switch (kind) {
    case PipelineKind::gpipe: return gpipe_schedule(stages, microbatches);
    case PipelineKind::one_f_one_b: return one_f_one_b_schedule(stages, microbatches);
    case PipelineKind::interleaved_1f1b: return interleaved_1f1b_schedule(stages, microbatches, chunks);
    case PipelineKind::zb_h1: return zb_h1_schedule(stages, microbatches);
  }
  throw detail::pipeline_error("make_pipeline_schedule", "unknown kind ", static_cast<int>(kind));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
