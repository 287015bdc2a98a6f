// send/recv over the per-pair Channel (see channel.hpp). Synchronous: send returns once the
// receiver has copied the data, so two ranks that both send to each other first wait for each
// other until the timeout (as MPI_Ssend would deadlock). A count or type mismatch fails both
// sides with chorus::Error (mismatch) and, like a mismatched collective, aborts the run: every
// later call on any rank throws.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "peer_wait.hpp"
#include "shared_state.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

struct Message {
  int peer = 0;
  DataType type = DataType::uint8;
  std::size_t count = 0;
  std::size_t bytes = 0;
};

inline void send_message(const SharedState& state, const PeerWaiter& waiter, const Message& m, const void* data) {
  waiter.throw_if_aborted();
  Channel& channel = state.channel(waiter.rank(), m.peer);
  const std::uint64_t k = channel.posted.load(std::memory_order_relaxed) + 1;
  channel.data = data;
  channel.count = m.count;
  channel.type = m.type;
  channel.posted.store(k, std::memory_order_release);
  try {
    waiter.wait(
        m.peer, [&] { return channel.taken.load(std::memory_order_acquire) >= k; }, [] {},
        [&] {
          return chorus::detail::concat("waiting for rank ", m.peer, " to receive message ", k, " (", m.count, " ",
                                        to_string(m.type), "); sends are synchronous, so two ranks that both send "
                                        "to each other first wait forever");
        });
  } catch (const std::exception& e) {
    state.withdraw(waiter.rank(), e.what());  // the receiver may be copying out of `data` right now
    throw;
  }
  if (!channel.matched) {
    waiter.fail(ErrorCode::mismatch, chorus::detail::concat("sent ", m.count, " ", to_string(m.type), " to rank ",
                                                            m.peer, ", which expected ", channel.expected_count, " ",
                                                            to_string(channel.expected_type)));
  }
}

inline void recv_message(const SharedState& state, const PeerWaiter& waiter, const Message& m, void* data) {
  waiter.throw_if_aborted();
  const int rank = waiter.rank();
  Channel& channel = state.channel(m.peer, rank);
  const std::uint64_t k = channel.taken.load(std::memory_order_relaxed) + 1;
  waiter.wait(
      m.peer, [&] { return channel.posted.load(std::memory_order_acquire) >= k; }, [] {},
      [&] {
        return chorus::detail::concat("waiting for rank ", m.peer, " to send message ", k, " (", m.count, " ",
                                      to_string(m.type), ")");
      });
  const bool matched = channel.count == m.count && channel.type == m.type;
  if (matched && m.bytes > 0 && data != nullptr) {
    if (!state.start_reading(rank, m.peer)) throw waiter.released();
    std::memcpy(data, channel.data, m.bytes);
    state.stop_reading(rank);
  }
  channel.matched = matched;
  channel.expected_count = m.count;
  channel.expected_type = m.type;
  if (!matched) {
    // Abort before the sender can see its verdict, so whichever side looks first, the run
    // already failed with `mismatch`.
    const Error error = waiter.failure(
        ErrorCode::mismatch, chorus::detail::concat("expected ", m.count, " ", to_string(m.type), " from rank ",
                                                    m.peer, ", which sent ", channel.count, " ",
                                                    to_string(channel.type)));
    channel.taken.store(k, std::memory_order_release);
    throw error;
  }
  channel.taken.store(k, std::memory_order_release);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
