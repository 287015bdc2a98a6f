// Memory MPI reads or writes while a call is in flight, kept per communicator so calls allocate
// nothing once sizes repeat. After a failure MPI may still touch it (a receive matched before its
// cancel, a send of the abandoned call still being read), so a failed communicator leaks this
// block on purpose, together with its MPI communicators (Endpoint's destructor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../runtime/wire_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

// The descriptor fields every rank votes on (Endpoint::begin): maxima, then negated minima.
inline constexpr int kVotedFields = 8;

struct CallMemory {
  runtime::WireCall outgoing;  // this rank's descriptor, sent to the next rank
  runtime::WireCall incoming;  // the previous rank's
  std::int64_t votes[2 * kVotedFields] = {};
  std::vector<std::byte> scratch;                      // schedules' scratch space
  std::vector<std::vector<std::byte>> spare_staging;   // receive staging, reused
  std::vector<std::vector<std::byte>> abandoned;       // staging of receives cancelled after a failure
  std::vector<std::byte> native_staging;               // NativeComm's in-place copies
};

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
