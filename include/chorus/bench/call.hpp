// One entry point for "run collective X" over any backend's Comm, and the in-place buffer layout
// of each collective, so a benchmark loop is written once for every collective and backend.
#pragma once

#include <cstddef>

#include "../algo/schedule.hpp"
#include "../core/algorithm.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

namespace chorus::bench {

// In place, both pointers lie in one buffer of `buffer_count` elements:
//   all_gather      send = buffer + rank*count, recv = buffer          (buffer: n*count)
//   reduce_scatter  send = buffer,              recv = buffer + rank*count (buffer: n*count)
//   the others      send = recv = buffer        (all_to_all: n*count, otherwise count)
struct InPlaceLayout {
  std::size_t buffer_count = 0;
  std::size_t send_offset = 0;
  std::size_t recv_offset = 0;
};

inline InPlaceLayout in_place_layout(algo::Collective collective, int rank, int ranks, std::size_t count) {
  const auto n = static_cast<std::size_t>(ranks);
  const auto r = static_cast<std::size_t>(rank);
  switch (collective) {
    case algo::Collective::all_gather: return {n * count, r * count, 0};
    case algo::Collective::reduce_scatter: return {n * count, 0, r * count};
    case algo::Collective::all_to_all: return {n * count, 0, 0};
    default: return {count, 0, 0};
  }
}

// Calls the collective with NCCL's argument meanings (count as in bandwidth.hpp's Shape::count).
// op is ignored by collectives that do not reduce, root by those without one, and the algorithm
// by every collective but all_reduce (the others choose their pattern themselves).
template <class Comm, class T>
void call_collective(Comm& comm, algo::Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op,
                     int root, Algorithm algorithm) {
  switch (collective) {
    case algo::Collective::all_reduce: comm.all_reduce(send, recv, count, op, algorithm); return;
    case algo::Collective::reduce_scatter: comm.reduce_scatter(send, recv, count, op); return;
    case algo::Collective::all_gather: comm.all_gather(send, recv, count); return;
    case algo::Collective::broadcast: comm.broadcast(send, recv, count, root); return;
    case algo::Collective::reduce: comm.reduce(send, recv, count, op, root); return;
    case algo::Collective::all_to_all: comm.all_to_all(send, recv, count); return;
  }
  throw Error(ErrorCode::invalid_argument, "chorus::bench::call_collective: unknown collective");
}

}  // namespace chorus::bench
