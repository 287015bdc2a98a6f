// How a shared-memory communicator is set up: its wait bound, its FIFOs' geometry and its store key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm {

struct Options {
  // Bound on every wait of this communicator, in ms; 0: CHORUS_TIMEOUT_MS (default 30 s). A framework
  // gives each process group its own.
  long timeout_ms = 0;
  // Each ordered pair of ranks has `slots` slots of `slot_bytes`: a step larger than a slot is cut into
  // slot-sized pieces, and schedules are pipelined in slot-sized slices. The segment holds
  // n(n-1) * slots * slot_bytes: 56 MiB at 8 ranks with these defaults.
  std::size_t slot_bytes = 256 * 1024;
  std::uint32_t slots = 4;
  // The store key under which rank 0 publishes the segment's name; empty: "chorus/shm/<n>", n counting
  // the communicators this process has built from a store (so build them in the same order everywhere).
  std::string key;
};

namespace detail {

inline constexpr std::size_t kMinSlotBytes = 4096;
inline constexpr std::size_t kMaxSlotBytes = std::size_t{64} << 20;
inline constexpr std::uint32_t kMinSlots = 2;
inline constexpr std::uint32_t kMaxSlots = 1024;

inline void check_options(const Options& options, const char* call, int rank) {
  if (options.timeout_ms < 0 || options.timeout_ms > env::kMaxTimeoutMs) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "Options::timeout_ms ", options.timeout_ms,
                     " is not in [0, ", env::kMaxTimeoutMs, "] (0: CHORUS_TIMEOUT_MS)");
  }
  if (options.slot_bytes < kMinSlotBytes || options.slot_bytes > kMaxSlotBytes) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "Options::slot_bytes ", options.slot_bytes,
                     " is not in [", kMinSlotBytes, ", ", kMaxSlotBytes, "]");
  }
  if (options.slots < kMinSlots || options.slots > kMaxSlots) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "Options::slots ", options.slots, " is not in [",
                     kMinSlots, ", ", kMaxSlots, "]");
  }
}

inline long timeout_of(const Options& options) { return options.timeout_ms > 0 ? options.timeout_ms : env::timeout_ms(); }

}  // namespace detail
}  CHORUS_NAMESPACE_END  // namespace chorus::shm
