// Argument checks that run on the calling rank before any communication, so a bad call fails
// alone and at once, with a message naming the call, the rank and the offending value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

inline void check_op(const char* call, RankName rank, ReduceOp op) {
  const int value = static_cast<int>(op);
  if (value < static_cast<int>(ReduceOp::sum) || value > static_cast<int>(ReduceOp::avg)) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "reduce op ", value, " is not a chorus::ReduceOp");
  }
}

inline void check_type(const char* call, RankName rank, DataType type) {
  const int value = static_cast<int>(type);
  if (value < 0 || value >= kDataTypeCount) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "data type ", value, " is not a chorus::DataType");
  }
}

inline void check_algorithm(const char* call, RankName rank, Collective collective, Algorithm algorithm) {
  const int value = static_cast<int>(algorithm);
  if (value < 0 || value >= kAlgorithmCount) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "algorithm ", value, " is not a chorus::Algorithm");
  }
  if (!supports(collective, algorithm)) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "algorithm ", to_string(algorithm),
                     " does not implement ", to_string(collective), " (choose from ", algorithm_choices(collective),
                     ")");
  }
}

inline void check_root(const char* call, RankName rank, int root, int size) {
  if (root < 0 || root >= size) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "root ", root, " is not a rank of this ", size,
                     "-rank communicator");
  }
}

inline void check_peer(const char* call, RankName rank, int peer, int size) {
  if (peer < 0 || peer >= size) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "peer ", peer, " is not a rank of this ", size,
                     "-rank communicator");
  }
  if (peer == rank.rank) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "peer ", peer,
                     " is this rank itself (a synchronous send to self would never complete)");
  }
}

inline void check_buffer(const char* call, RankName rank, const void* buffer, std::size_t count, const char* name) {
  if (buffer == nullptr && count > 0) {
    throw make_error(ErrorCode::invalid_argument, call, rank, name, " buffer is null with count ", count);
  }
}

// count * factor elements of element_size bytes must be addressable; returns the byte size.
inline std::size_t checked_bytes(const char* call, RankName rank, std::size_t count, std::size_t factor,
                                 std::size_t element_size) {
  const std::size_t limit = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  if (factor != 0 && count > limit / factor / element_size) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "count ", count, " times ", factor, " elements of ",
                     element_size, " bytes overflows the address space");
  }
  return count * factor * element_size;
}

// Buffers may be the same memory in the documented in-place arrangement, or disjoint; anything
// else would make the result depend on timing.
inline void check_overlap(const char* call, RankName rank, const void* send, std::size_t send_bytes, const void* recv,
                          std::size_t recv_bytes, bool in_place) {
  if (in_place || send_bytes == 0 || recv_bytes == 0) return;
  const auto s = reinterpret_cast<std::uintptr_t>(send);
  const auto r = reinterpret_cast<std::uintptr_t>(recv);
  if (s < r + recv_bytes && r < s + send_bytes) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "send buffer [", send, ", +", send_bytes,
                     " bytes) overlaps recv buffer [", recv, ", +", recv_bytes,
                     " bytes) without being the in-place arrangement");
  }
}

inline void check_comm(const char* call, bool valid) {
  if (!valid) {
    // A null communicator has no rank to name.
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::", call, ": called on a null communicator (from split with a "
                                       "negative colour, or default-constructed)"));
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
