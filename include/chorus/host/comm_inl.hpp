// host::Comm's non-template members: compiled in every translation unit in header-only mode, once
// in libchorus in compiled mode (core/config.hpp). Included by comm.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "../algo/printer.hpp"
#include "../core/env.hpp"
#include "../core/log.hpp"
#include "../runtime/flight_record_json.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/element_ops.hpp"
#include "../runtime/interpreter.hpp"
#include "../runtime/validate.hpp"
#include "comm.hpp"
#include "peer_wait.hpp"
#include "point_to_point.hpp"
#include "shared_memory_transport.hpp"
#include "step_hook.hpp"
#include "tuning.hpp"

CHORUS_NAMESPACE_BEGIN namespace host {

CHORUS_FUNC void Comm::send(const void* data, std::size_t count, DataType type, int peer) {
  const detail::Message m = checked_message("send", data, count, type, peer);
  detail::send_message(*state_, detail::PeerWaiter(*state_, "send", rank_, timeout_for("send")), m, data);
}
CHORUS_FUNC void Comm::recv(void* data, std::size_t count, DataType type, int peer) {
  const detail::Message m = checked_message("recv", data, count, type, peer);
  detail::recv_message(*state_, detail::PeerWaiter(*state_, "recv", rank_, timeout_for("recv")), m, data);
}

CHORUS_FUNC detail::Message Comm::checked_message(const char* name, const void* data, std::size_t count,
                                                   DataType type, int peer) const {
  runtime::check_comm(name, state_ != nullptr);
  detail::Message m;
  m.bytes = runtime::check_point_to_point(name, state_->name(rank_), state_->size(), data, count, type, peer);
  m.peer = peer;
  m.type = type;
  m.count = count;
  return m;
}

// CHORUS_TIMEOUT_MS, read at each call; a malformed value fails the call like a bad argument.
CHORUS_FUNC long Comm::timeout_for(const char* call) const {
  try {
    return env::timeout_ms();
  } catch (const Error& e) {
    throw make_error(ErrorCode::invalid_argument, call, state_->name(rank_), e.what());
  }
}

CHORUS_FUNC void Comm::barrier() {
  runtime::check_comm("barrier", state_ != nullptr);
  runtime::CallDescriptor call;
  call.kind = runtime::CallKind::barrier;
  synchronise("barrier", call, timeout_for("barrier"));
}

CHORUS_FUNC Comm Comm::split(int color, int key) {
  runtime::check_comm("split", state_ != nullptr);
  const long timeout_ms = timeout_for("split");
  const int n = state_->size();
  runtime::CallDescriptor call;
  call.kind = runtime::CallKind::split;
  call.color = color;
  call.key = key;

  // 1. Exchange (colour, key): every descriptor of this call is readable once finish() returns,
  //    until this rank begins its next call.
  std::vector<int> members;
  std::vector<std::pair<int, int>> keys;  // (key, parent rank) of my colour
  {
    detail::SharedMemoryTransport transport(*state_, rank_, *me_, "split", call, timeout_ms);
    transport.begin();
    transport.finish();
    if (color >= 0) {
      for (int r = 0; r < n; ++r) {
        const runtime::CallDescriptor& theirs = r == rank_ ? call : transport.peer_descriptor(r);
        if (theirs.color == color) keys.emplace_back(theirs.key, r);
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  for (const auto& entry : keys) members.push_back(entry.second);
  const bool leader = !members.empty() && members.front() == rank_;

  // 2. The first member creates the shared state and hands it over through its slot.
  if (leader) {
    std::vector<int> team_ranks;
    for (int r : members) team_ranks.push_back(state_->team_rank(r));
    auto child = std::make_shared<detail::SharedState>(state_->fault_ptr(), team_ranks, false,
                                                       state_->recorder_calls());
    child->set_ring_order(detail::ring_order_of_members(state_->ring_order(), members, n));
    child->set_trace(state_->trace_ptr());
    child->set_automatic(state_->automatic());
    child->set_log_level(state_->log_level());
    if (state_->log_level() >= LogLevel::info) {
      std::string listed;
      for (int r : team_ranks) listed += chorus::detail::concat(listed.empty() ? "" : " ", r);
      log(LogLevel::info, "communicator ", child->id(), ": ", members.size(), " ranks split from communicator ",
          state_->id(), " by colour ", color, " (team ranks ", listed, ")");
    }
    state_->slot(rank_).handoff = std::move(child);
  }
  runtime::CallDescriptor phase;
  phase.kind = runtime::CallKind::barrier;
  synchronise("split", phase, timeout_ms);
  Comm result;
  if (!members.empty()) {
    result.state_ = state_->slot(members.front()).handoff;
    result.rank_ = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    result.me_ = std::make_unique<detail::RankState>(result.state_->size());
  }
  // 3. Once everyone holds its reference, the leader drops the slot's.
  synchronise("split", phase, timeout_ms);
  if (leader) state_->slot(rank_).handoff.reset();
  return result;
}

CHORUS_FUNC const std::vector<int>& Comm::ring_order() const {
  runtime::check_comm("ring_order", state_ != nullptr);
  return state_->ring_order();
}

CHORUS_FUNC void Comm::dump_trace(const std::string& path) const {
  runtime::check_comm("dump_trace", state_ != nullptr);
  runtime::dump_flight_record(path, state_->flight_records(), state_->dump_origin(), "dump_trace",
                              state_->name(rank_));
}

CHORUS_FUNC void Comm::synchronise(const char* name, const runtime::CallDescriptor& call, long timeout_ms) {
  detail::SharedMemoryTransport transport(*state_, rank_, *me_, name, call, timeout_ms);
  // Recorded before it is published: a peer that finds a mismatch with it must find it recorded too.
  detail::StepHook hook(*state_, rank_, me_->sequence + 1, call);
  try {
    transport.begin();
    hook.run(0);
    transport.finish();
  } catch (...) {
    hook.end(runtime::CallState::failed);
    throw;
  }
  hook.end(runtime::CallState::done);
}

CHORUS_FUNC void Comm::erased_collective(const runtime::CollectiveArgs& args) {
  // An invalid type gets some table here and is refused by check_collective before any use.
  collective(args, runtime::element_ops(args.type));
}

CHORUS_FUNC void Comm::collective(const runtime::CollectiveArgs& args, const runtime::ElementOps* ops) {
  const char* name = traits(args.collective).name;
  runtime::check_comm(name, state_ != nullptr);
  const int n = state_->size();
  runtime::CheckedCall checked = runtime::check_collective(args, state_->name(rank_), n);
  runtime::CallDescriptor& call = checked.descriptor;
  const std::size_t bytes = args.count * checked.element_size;
  const detail::PatternChoice choice =
      args.algorithm != Algorithm::automatic ? detail::PatternChoice{algo::pattern_for(args.algorithm), "asked for by the caller"}
      : state_->automatic() ? detail::PatternChoice{detail::ask_automatic(*state_->automatic(), args, checked.element_size,
                                                                          n, state_->name(rank_)),
                                                    "the team's automatic function (Team::set_automatic) chose it"}
                            : detail::explain_pattern(args.collective, bytes, n, state_->team_size());
  call.pattern = choice.pattern;
  const algo::Schedule& schedule = me_->schedules.get(
      runtime::schedule_key(call, n, detail::slice_elements(checked.element_size)), state_->schedules(),
      [&](const algo::Schedule& built) {  // a choice this rank has not made lately: say why, once per communicator
        if (rank_ != 0 || state_->log_level() < LogLevel::info) return;  // off: no description, no getenv
        log(LogLevel::info, "communicator ", state_->id(), ": ", runtime::describe(call), " (", bytes, " B, ", n,
            " ranks): ", algo::to_string(call.pattern), " because ", choice.reason);
        if (state_->log_level() >= LogLevel::debug) log(LogLevel::debug, "schedule:\n", algo::to_table(built));
      });

  const runtime::StepMath math{checked.element_size, ops, call.op};
  const runtime::Buffers buffers{checked.uses_send ? static_cast<const std::byte*>(args.send) : nullptr,
                                 checked.uses_recv ? static_cast<std::byte*>(args.recv) : nullptr, nullptr};
  detail::SharedMemoryTransport transport(*state_, rank_, *me_, name, call, timeout_for(name));
  // Recorded before it is published: a peer that finds a mismatch with it must find it recorded too.
  detail::StepHook hook(*state_, rank_, me_->sequence + 1, call);
  try {
    transport.begin();
    hook.run(schedule.steps[static_cast<std::size_t>(rank_)].size());
    runtime::interpret(name, rank_, schedule, buffers, math, transport, hook);
    hook.finishing();
    transport.finish();
  } catch (const std::exception& e) {
    // Recording must not stop the withdrawal (it can throw bad_alloc with tracing on): the peers must be
    // released before the caller frees its buffers.
    try {
      hook.end(runtime::CallState::failed);
    } catch (...) {
    }
    transport.withdraw(e.what());  // the caller may free its buffers once this returns
    throw;
  }
  hook.end(runtime::CallState::done);
  if (traits(args.collective).reduces && call.op == ReduceOp::avg && checked.uses_recv) {
    ops->finish_avg(args.recv, args.count, n);
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::host
