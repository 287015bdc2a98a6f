// The six collectives and the facts every layer needs about them, in one table: whether a
// collective reduces, whether it has a root, how big each rank's buffers are for a given count,
// and how its buffers alias in place. Schedules, argument checks, backends and benchmarks read
// these facts here instead of re-deriving them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.hpp"



CHORUS_NAMESPACE_BEGIN

enum class Collective : std::uint8_t { all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all };

inline constexpr int kCollectiveCount = 6;
inline constexpr Collective kCollectives[kCollectiveCount] = {
    Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather,
    Collective::broadcast,  Collective::reduce,         Collective::all_to_all};

// Where the send buffer sits when a call is in place (NCCL's rule), for count c on rank r:
//   same_buffer        send == recv
//   send_inside_recv   send == recv + r*c   (all_gather: this rank's block of the gathered output)
//   recv_inside_send   recv == send + r*c   (reduce_scatter: this rank's block of the input)
enum class InPlaceLayout : std::uint8_t { same_buffer, send_inside_recv, recv_inside_send };

struct CollectiveTraits {
  const char* name;
  bool reduces;        // takes a ReduceOp
  bool rooted;         // takes a root
  bool send_per_rank;  // the send buffer holds ranks * count elements (else count)
  bool recv_per_rank;  // the recv buffer holds ranks * count elements (else count)
  // Rooted collectives touch one side on the root only: broadcast reads send there, reduce
  // writes recv there; on the other ranks that buffer is ignored and may be null.
  bool send_on_root_only;
  bool recv_on_root_only;
  InPlaceLayout in_place;
};

// Indexed by Collective.
inline constexpr CollectiveTraits kCollectiveTraits[kCollectiveCount] = {
    //  name              reduces rooted send*n  recv*n  send@root recv@root in place
    {"all_reduce",      true,   false, false,  false,  false,    false,    InPlaceLayout::same_buffer},
    {"reduce_scatter",  true,   false, true,   false,  false,    false,    InPlaceLayout::recv_inside_send},
    {"all_gather",      false,  false, false,  true,   false,    false,    InPlaceLayout::send_inside_recv},
    {"broadcast",       false,  true,  false,  false,  true,     false,    InPlaceLayout::same_buffer},
    {"reduce",          true,   true,  false,  false,  false,    true,     InPlaceLayout::same_buffer},
    {"all_to_all",      false,  false, true,   true,   false,    false,    InPlaceLayout::same_buffer},
};

constexpr const CollectiveTraits& traits(Collective collective) {
  return kCollectiveTraits[static_cast<int>(collective)];
}

inline const char* to_string(Collective collective) {
  const auto index = static_cast<unsigned>(collective);
  return index < static_cast<unsigned>(kCollectiveCount) ? kCollectiveTraits[index].name : "unknown";
}

// Elements in each rank's send and recv buffer for a call with `count` (the count argument of the
// call) on `ranks` ranks. Unchecked: argument checking guards the products against overflow.
constexpr std::size_t send_count(Collective collective, std::size_t count, int ranks) {
  return traits(collective).send_per_rank ? count * static_cast<std::size_t>(ranks) : count;
}
constexpr std::size_t recv_count(Collective collective, std::size_t count, int ranks) {
  return traits(collective).recv_per_rank ? count * static_cast<std::size_t>(ranks) : count;
}

// In place, both pointers lie in one buffer: its size and where send and recv start in it.
struct InPlaceBuffer {
  std::size_t buffer_count = 0;
  std::size_t send_offset = 0;
  std::size_t recv_offset = 0;
};

constexpr InPlaceBuffer in_place_buffer(Collective collective, int rank, int ranks,
                                                           std::size_t count) {
  const std::size_t block = count * static_cast<std::size_t>(rank);
  const std::size_t buffer = send_count(collective, count, ranks) > recv_count(collective, count, ranks)
                                 ? send_count(collective, count, ranks)
                                 : recv_count(collective, count, ranks);
  switch (traits(collective).in_place) {
    case InPlaceLayout::send_inside_recv: return {buffer, block, 0};
    case InPlaceLayout::recv_inside_send: return {buffer, 0, block};
    case InPlaceLayout::same_buffer: break;
  }
  return {buffer, 0, 0};
}

// Whether (send, recv) is the in-place arrangement for this rank (addresses in bytes).
inline bool is_in_place(Collective collective, const void* send, const void* recv, int rank, std::size_t count,
                        std::size_t element_size) {
  const auto s = reinterpret_cast<std::uintptr_t>(send);
  const auto r = reinterpret_cast<std::uintptr_t>(recv);
  const std::size_t block = count * element_size * static_cast<std::size_t>(rank);
  switch (traits(collective).in_place) {
    case InPlaceLayout::send_inside_recv: return s == r + block;
    case InPlaceLayout::recv_inside_send: return r == s + block;
    case InPlaceLayout::same_buffer: break;
  }
  return s == r;
}

CHORUS_NAMESPACE_END  // namespace chorus
