// What a shared-memory rank keeps between calls so that steady-state calls allocate nothing: the
// queues of sends waiting for room in a FIFO, the staging of messages larger than a slot, and the
// schedules' scratch space.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

// A send step not yet (wholly) in its peer's FIFO: it still reads the caller's buffer.
struct QueuedSend {
  const std::byte* src;
  std::size_t bytes;
  std::size_t offset;  // bytes already in the FIFO
};

struct CallMemory {
  std::vector<std::deque<QueuedSend>> queues;  // per peer
  std::vector<std::byte> staging;
  std::vector<std::byte> scratch;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
