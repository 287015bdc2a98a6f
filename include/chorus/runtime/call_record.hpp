// One entry of a flight recorder (flight_recorder.hpp): what a rank did at one sequence number of a
// communicator, and how far it got. A plain value: snapshots of every rank's recorder are compared
// (desync_summary.hpp) and written as JSON (flight_record_json.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "call_descriptor.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

// posted: the call entered and published what it is; running: executing its steps; done: returned;
// failed: left with an exception.
enum class CallState : std::uint8_t { posted, running, done, failed };

inline const char* to_string(CallState state) {
  switch (state) {
    case CallState::posted: return "posted";
    case CallState::running: return "running";
    case CallState::done: return "done";
    case CallState::failed: return "failed";
  }
  return "unknown";
}

struct CallRecord {
  static constexpr std::int32_t kNoStep = -1;

  std::uint64_t sequence = 0;  // 1 for a communicator's first call
  CallDescriptor call{};       // collective, count, type, op, root, algorithm, in-place
  CallState state = CallState::posted;
  std::int64_t start_ns = 0;   // steady clock; end_ns == 0 until the call returns or fails
  std::int64_t end_ns = 0;
  std::int32_t steps = 0;      // this rank's steps in the call's schedule
  // The step in progress (kNoStep before the first; `steps` while finishing: waiting for peers to
  // acknowledge and to enter the call) and the peer it exchanges with (-1: none).
  std::int32_t step = kNoStep;
  std::int32_t peer = -1;
};

// "all_reduce 16 x float sum ring in place", "broadcast 8 x int32 root 2 binomial", "barrier".
inline std::string describe(const CallDescriptor& call) {
  if (!is_collective(call.kind)) return to_string(call.kind);
  const Collective collective = call.collective();
  std::string text = chorus::detail::concat(to_string(call.kind), " ", call.count, " x ", chorus::to_string(call.type));
  if (traits(collective).reduces) text += chorus::detail::concat(" ", chorus::to_string(call.op));
  if (traits(collective).rooted) text += chorus::detail::concat(" root ", call.root);
  text += chorus::detail::concat(" ", algo::to_string(call.pattern));
  if (call.in_place) text += " in place";
  return text;
}

// "call 3 all_reduce 16 x float sum ring: running, at step 2 of 6 (peer 1)".
inline std::string describe(const CallRecord& record) {
  std::string text = chorus::detail::concat("call ", record.sequence, " ", describe(record.call), ": ",
                                            to_string(record.state));
  if (record.state == CallState::running || record.state == CallState::failed) {
    if (record.step >= record.steps && record.steps > 0) {
      text += chorus::detail::concat(", finishing after its last step (waiting for peers)");
    } else if (record.step >= 0) {
      text += chorus::detail::concat(", at step ", record.step, " of ", record.steps);
      if (record.peer >= 0) text += chorus::detail::concat(" (peer ", record.peer, ")");
    }
  }
  return text;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
