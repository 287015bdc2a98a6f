// Memory MPI reads or writes while a call is in flight, kept per communicator so calls allocate
// nothing once sizes repeat. After a failure MPI may still touch it (a receive matched before its
// cancel, a send of the abandoned call still being read), so a failed communicator leaks this
// block on purpose, together with its MPI communicators (Endpoint's destructor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../runtime/wire_call.hpp"

namespace chorus::mpi::detail {

// A call descriptor on the wire (runtime/wire_call.hpp, shared with the shm backend).
using runtime::WireCall;

// The descriptor fields every rank votes on (Endpoint::begin): maxima, then negated minima, so that
// combining two votes is one elementwise maximum.
inline constexpr int kVotedFields = 8;
inline constexpr int kVoteWords = 2 * kVotedFields;
// ceil(log2 ranks) rounds of the dissemination vote; an int rank count needs at most 31.
inline constexpr int kMaxVoteRounds = 32;

struct CallMemory {
  WireCall outgoing;  // this rank's descriptor, sent to the next rank
  WireCall incoming;  // the previous rank's
  std::int64_t votes[kVoteWords] = {};                      // this rank's vote so far
  std::int64_t votes_sent[kMaxVoteRounds][kVoteWords] = {};  // per round: MPI reads it until the send completes
  std::int64_t votes_received[kMaxVoteRounds][kVoteWords] = {};
  std::vector<std::byte> scratch;                      // schedules' scratch space
  std::vector<std::vector<std::byte>> spare_staging;   // receive staging, reused
  std::vector<std::vector<std::byte>> abandoned;       // staging of receives cancelled after a failure
  std::vector<std::byte> native_staging;               // NativeComm's in-place copies
};

}  // namespace chorus::mpi::detail
