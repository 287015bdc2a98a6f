// send/recv over the per-pair Channel (see channel.hpp). Synchronous: send returns once the
// receiver has copied the data, so two ranks that both send to each other first wait for each
// other until the timeout (as MPI_Ssend would deadlock). A count or type mismatch fails both
// sides with chorus::Error (mismatch) and leaves the channel usable.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "shared_state.hpp"
#include "wait.hpp"

namespace chorus::host::detail {

struct Message {
  const char* call = "";
  int rank = 0;
  int peer = 0;
  DataType type = DataType::uint8;
  std::size_t count = 0;
  std::size_t bytes = 0;
  long timeout_ms = 0;
};

inline Released released(const SharedState& state, const Message& m) {
  return state.fault().released(m.call, m.rank, state.is_team() ? "rank " : "team rank ");
}

// Waits for ready(), leaving early when the team aborts or the peer has left its function.
template <class Ready, class Describe>
void wait_for_peer(const SharedState& state, const Message& m, Ready&& ready, Describe&& describe) {
  const auto fail = [&](ErrorCode code, const std::string& what) {
    Error error = make_error(code, m.call, m.rank, what);
    state.fault().abort(state.team_rank(m.rank), code, error.what());
    throw error;
  };
  WaitingMark mark(state, m.rank, m.peer);
  wait_until(
      m.timeout_ms, state.yields(), ready,
      [&] {
        mark.set();
        if (state.fault().aborted()) throw released(state, m);
        if (state.fault().exited(state.team_rank(m.peer)) && !ready()) {
          fail(ErrorCode::mismatch, chorus::detail::concat("rank ", m.peer, " returned from its function while this rank was ",
                                                          describe()));
        }
      },
      [&]() -> long {
        if (mark.grace()) return m.timeout_ms;
        fail(ErrorCode::timeout,
             chorus::detail::concat("timed out after ", mark.waited_ms(m.timeout_ms), " ms ", describe()));
        return 0;
      });
}

inline void send_message(const SharedState& state, const Message& m, const void* data) {
  if (state.fault().aborted()) throw released(state, m);
  Channel& channel = state.channel(m.rank, m.peer);
  const std::uint64_t k = channel.posted.load(std::memory_order_relaxed) + 1;
  channel.data = data;
  channel.count = m.count;
  channel.type = m.type;
  channel.posted.store(k, std::memory_order_release);
  try {
    wait_for_peer(
        state, m, [&] { return channel.taken.load(std::memory_order_acquire) >= k; },
        [&] {
          return chorus::detail::concat("waiting for rank ", m.peer, " to receive message ", k, " (", m.count, " ",
                                        to_string(m.type), "); sends are synchronous, so two ranks that both send "
                                        "to each other first wait forever");
        });
  } catch (const std::exception& e) {
    state.withdraw(m.rank, e.what());  // the receiver may be copying out of `data` right now
    throw;
  }
  if (!channel.matched) {
    throw make_error(ErrorCode::mismatch, m.call, m.rank, "sent ", m.count, " ", to_string(m.type), " to rank ",
                     m.peer, ", which expected ", channel.expected_count, " ", to_string(channel.expected_type));
  }
}

inline void recv_message(const SharedState& state, const Message& m, void* data) {
  if (state.fault().aborted()) throw released(state, m);
  Channel& channel = state.channel(m.peer, m.rank);
  const std::uint64_t k = channel.taken.load(std::memory_order_relaxed) + 1;
  wait_for_peer(
      state, m, [&] { return channel.posted.load(std::memory_order_acquire) >= k; },
      [&] {
        return chorus::detail::concat("waiting for rank ", m.peer, " to send message ", k, " (", m.count, " ",
                                      to_string(m.type), ")");
      });
  const bool matched = channel.count == m.count && channel.type == m.type;
  const std::size_t sent_count = channel.count;
  const DataType sent_type = channel.type;
  if (matched && m.bytes > 0 && data != nullptr) {
    if (!state.start_reading(m.rank, m.peer)) throw released(state, m);
    std::memcpy(data, channel.data, m.bytes);
    state.stop_reading(m.rank);
  }
  channel.matched = matched;
  channel.expected_count = m.count;
  channel.expected_type = m.type;
  channel.taken.store(k, std::memory_order_release);
  if (!matched) {
    throw make_error(ErrorCode::mismatch, m.call, m.rank, "expected ", m.count, " ", to_string(m.type),
                     " from rank ", m.peer, ", which sent ", sent_count, " ", to_string(sent_type));
  }
}

}  // namespace chorus::host::detail
