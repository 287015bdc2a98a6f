// What one rank keeps privately for a communicator between calls: counters that pair its sends
// and receives with its peers' acknowledgements, its unacknowledged sends, and its schedule cache.
// Sized once; calls only clear and refill it, so steady state allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../runtime/schedule_cache.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

// A send whose receiver has not acknowledged it yet: its memory must not be overwritten.
struct PendingSend {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  int peer = 0;
  std::uint64_t ordinal = 0;  // acknowledged once acks(this rank, peer) >= ordinal
};

struct RankState {
  explicit RankState(int size)
      : sent(static_cast<std::size_t>(size), 0),
        received(static_cast<std::size_t>(size), 0),
        acked(static_cast<std::size_t>(size), 0),
        checked(static_cast<std::size_t>(size), 0) {
    pending.reserve(64);
  }

  std::uint64_t sequence = 0;          // calls made on this communicator
  std::vector<std::uint64_t> sent;     // messages sent to each peer, lifetime total
  std::vector<std::uint64_t> received; // messages consumed from each peer (published as acks)
  std::vector<std::uint64_t> acked;    // acknowledgements last seen from each peer
  std::vector<std::uint8_t> checked;   // peer's descriptor for the current call compared
  std::vector<PendingSend> pending;
  runtime::ScheduleCache schedules;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
