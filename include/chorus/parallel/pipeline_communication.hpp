// The sends and receives of a pipeline schedule, placed so that it cannot deadlock even though a
// send is synchronous (it returns only once the receiver has the data, like MPI_Ssend; host::Comm
// and the rendezvous paths of MPI behave so).
//
// Why it needs care: in 1F1B's steady state stage i sends activation j+1 forward while stage i+1
// sends gradient j back; if both send first, both wait forever. Megatron avoids it with batched
// isend/irecv, or with a parity rule on its unbatched path. chorus derives the order instead: it
// simulates the schedule (pipeline_simulator.hpp), lays every compute and every transfer on one
// global timeline (a transfer at the moment its receiver starts the action that needs it, before
// any compute at that moment), and gives each rank the sub-sequence that concerns it. Every rank's
// list is then a projection of one sequential run, so the first transfer not yet done in that run
// always finds both its sender and its receiver waiting for it: no cycle can form, whatever the
// real durations are. Transfers between two chunks on the same rank (p = 1) need no message.
//
// verify_pipeline_communication checks any schedule with send/recv actions independently: every
// send meets a recv of the same tensor (op, microbatch, neighbouring virtual stage) and the lists
// finish under rendezvous semantics.
#pragma once

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "pipeline_schedule.hpp"
#include "pipeline_simulator.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

inline bool has_communication(const PipelineSchedule& s) {
  for (const auto& list : s.actions) {
    for (const PipelineAction& a : list) {
      if (!is_compute(a.op)) return true;
    }
  }
  return false;
}

// `compute`'s actions plus the transfers between ranks. `costs` only steers where transfers go
// (any positive costs give a deadlock-free order); the default unit costs suit most pipelines.
inline PipelineSchedule with_communication(const PipelineSchedule& compute, const PipelineCosts& costs = {}) {
  if (has_communication(compute)) {
    throw detail::pipeline_error("with_communication", "the schedule already has send/recv actions");
  }
  const PipelineTimeline timeline = simulate_pipeline(compute, costs);
  const int last = compute.virtual_stages() - 1;

  // (time, meeting before compute, tie-breakers...) -> which rank gets which action.
  struct Event {
    double time;
    int kind;  // 0: transfer, 1: compute
    int rank;  // the receiver for a transfer
    int index;
    int from;  // transfers: the sender
    PipelineAction send, recv;
    PipelineAction compute;
  };
  auto key = [](const Event& e) {
    return std::make_tuple(e.time, e.kind, e.rank, e.from, e.recv.microbatch, e.recv.chunk, static_cast<int>(e.recv.op),
                           e.index);
  };
  std::vector<Event> events;
  for (int r = 0; r < compute.stages; ++r) {
    const auto& list = timeline.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const PipelineAction& a = list[i].action;
      events.push_back({list[i].start, 1, r, static_cast<int>(i), -1, {}, {}, a});
      const int vs = compute.virtual_stage(r, a.chunk);
      // What this action needs from another virtual stage, and so which transfer precedes it.
      int source = -1;
      PipelineOp send_op = PipelineOp::send_activation, recv_op = PipelineOp::recv_activation;
      if (a.op == PipelineOp::forward && vs > 0) {
        source = vs - 1;
      } else if ((a.op == PipelineOp::backward || a.op == PipelineOp::backward_input) && vs < last) {
        source = vs + 1;
        send_op = PipelineOp::send_gradient;
        recv_op = PipelineOp::recv_gradient;
      }
      if (source < 0) continue;
      const int from = compute.rank_of(source);
      if (from == r) continue;  // a chunk handing to the next chunk on the same rank
      events.push_back({list[i].start, 0, r, static_cast<int>(i), from,
                        {send_op, a.microbatch, compute.chunk_of(source), r}, {recv_op, a.microbatch, a.chunk, from}, {}});
    }
  }
  std::sort(events.begin(), events.end(), [&](const Event& a, const Event& b) { return key(a) < key(b); });

  PipelineSchedule out = compute;
  for (auto& list : out.actions) list.clear();
  for (const Event& e : events) {
    if (e.kind == 1) {
      out.actions[static_cast<std::size_t>(e.rank)].push_back(e.compute);
    } else {
      out.actions[static_cast<std::size_t>(e.from)].push_back(e.send);
      out.actions[static_cast<std::size_t>(e.rank)].push_back(e.recv);
    }
  }
  return out;
}

// Runs the lists with synchronous transfers: a send and a recv complete together, when each is at
// the head of its rank's list and they name each other. Throws chorus::Error on a transfer whose
// two sides disagree (different tensor) or on a deadlock, naming the ranks and actions involved.
inline void verify_pipeline_communication(const PipelineSchedule& s) {
  const char* call = "verify_pipeline_communication";
  const auto p = static_cast<std::size_t>(s.stages);
  if (s.actions.size() != p) throw detail::pipeline_error(call, s.actions.size(), " action lists for ", p, " stages");
  std::vector<std::size_t> next(p, 0);
  auto head = [&](std::size_t r) -> const PipelineAction* {
    return next[r] < s.actions[r].size() ? &s.actions[r][next[r]] : nullptr;
  };
  auto is_send = [](PipelineOp op) { return op == PipelineOp::send_activation || op == PipelineOp::send_gradient; };
  auto describe = [&](std::size_t r, const PipelineAction& a) {
    return chorus::detail::concat("rank ", r, " ", to_string(a, s.chunks > 1));
  };
  for (std::size_t r = 0; r < p; ++r) {
    for (const PipelineAction& a : s.actions[r]) {
      if (!is_compute(a.op) && (a.peer < 0 || a.peer >= s.stages || static_cast<std::size_t>(a.peer) == r)) {
        throw detail::pipeline_error(call, describe(r, a), " names peer ", a.peer, " of ", s.stages, " ranks");
      }
    }
  }
  for (;;) {
    bool progressed = false, finished = true;
    for (std::size_t r = 0; r < p; ++r) {
      while (const PipelineAction* a = head(r)) {
        if (is_compute(a->op)) {
          ++next[r];
          progressed = true;
          continue;
        }
        if (!is_send(a->op)) break;  // a recv waits for its sender to reach the matching send
        const auto peer = static_cast<std::size_t>(a->peer);
        const PipelineAction* b = head(peer);
        if (b == nullptr || is_compute(b->op) || is_send(b->op) || static_cast<std::size_t>(b->peer) != r) break;
        const bool activation = a->op == PipelineOp::send_activation;
        const int from_vs = s.virtual_stage(static_cast<int>(r), a->chunk);
        const int to_vs = s.virtual_stage(static_cast<int>(peer), b->chunk);
        const bool same_tensor = b->op == (activation ? PipelineOp::recv_activation : PipelineOp::recv_gradient) &&
                                 b->microbatch == a->microbatch && to_vs == from_vs + (activation ? 1 : -1);
        if (!same_tensor) {
          throw detail::pipeline_error(call, describe(r, *a), " meets ", describe(peer, *b), ": not the same tensor");
        }
        ++next[r];
        ++next[peer];
        progressed = true;
      }
      finished = finished && head(r) == nullptr;
    }
    if (finished) break;
    if (!progressed) {
      std::string stuck;
      for (std::size_t r = 0; r < p; ++r) {
        if (const PipelineAction* a = head(r)) stuck += chorus::detail::concat(stuck.empty() ? "" : ", ", describe(r, *a));
      }
      throw detail::pipeline_error(call, "deadlock with synchronous sends: ", stuck);
    }
  }
  // Data flow on each rank: a tensor from another rank is received before the action that uses it,
  // and a tensor for another rank is computed before it is sent.
  const int last = s.virtual_stages() - 1;
  for (std::size_t r = 0; r < p; ++r) {
    std::set<std::tuple<int, int, int>> seen;  // (op, chunk, microbatch)
    auto was = [&](PipelineOp op, const PipelineAction& a) {
      return seen.count(std::make_tuple(static_cast<int>(op), a.chunk, a.microbatch)) > 0;
    };
    for (const PipelineAction& a : s.actions[r]) {
      const int vs = s.virtual_stage(static_cast<int>(r), a.chunk);
      bool ok = true;
      if (a.op == PipelineOp::forward && vs > 0 && s.rank_of(vs - 1) != static_cast<int>(r)) {
        ok = was(PipelineOp::recv_activation, a);
      } else if ((a.op == PipelineOp::backward || a.op == PipelineOp::backward_input) && vs < last &&
                 s.rank_of(vs + 1) != static_cast<int>(r)) {
        ok = was(PipelineOp::recv_gradient, a);
      } else if (a.op == PipelineOp::send_activation) {
        ok = was(PipelineOp::forward, a);
      } else if (a.op == PipelineOp::send_gradient) {
        ok = was(PipelineOp::backward, a) || was(PipelineOp::backward_input, a);
      }
      if (!ok) throw detail::pipeline_error(call, describe(r, a), " comes before the transfer or compute it needs");
      seen.insert(std::make_tuple(static_cast<int>(a.op), a.chunk, a.microbatch));
    }
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
