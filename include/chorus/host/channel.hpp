// Point-to-point rendezvous for one ordered pair of ranks (sender -> receiver), separate from the
// collective sequence so send/recv may interleave freely with collectives. The sender posts
// {pointer, count, type} and waits until the receiver has copied it (synchronous send, like
// MPI_Ssend): the receiver reads straight out of the sender's buffer, so the buffer must stay
// untouched until then. Both counters only grow; message k is posted when posted >= k and
// finished when taken >= k.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "../core/data_type.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

struct alignas(64) Channel {
  std::atomic<std::uint64_t> posted{0};  // written by the sender
  std::atomic<std::uint64_t> taken{0};   // written by the receiver
  // The posted message; written before `posted` is released.
  const void* data = nullptr;
  std::size_t count = 0;
  DataType type = DataType::uint8;
  // The receiver's verdict on message `taken`, written before `taken` is released: whether it
  // matched, and if not what the receiver expected (for the sender's error message).
  bool matched = true;
  std::size_t expected_count = 0;
  DataType expected_type = DataType::uint8;

  void reset() {
    posted.store(0, std::memory_order_relaxed);
    taken.store(0, std::memory_order_relaxed);
    data = nullptr;
    count = 0;
    matched = true;
  }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
