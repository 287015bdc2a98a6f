// One entry point for "run collective X" over any communicator (core/communicator.hpp), so a
// benchmark loop is written once for every collective and backend. The in-place buffer layout of
// each collective is chorus::in_place_buffer (core/collective.hpp).
#pragma once

#include <cstddef>

#include <type_traits>
#include <utility>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {
namespace detail {
// Whether Comm's collectives other than all_reduce take an Algorithm: a backend offers it on all
// of them or none (probed on broadcast).
template <class Comm, class T, class = void>
struct takes_algorithm : std::false_type {};
template <class Comm, class T>
struct takes_algorithm<Comm, T,
                       std::void_t<decltype(std::declval<Comm&>().broadcast(std::declval<const T*>(), std::declval<T*>(),
                                                                            std::size_t{}, 0, Algorithm::ring))>>
    : std::true_type {};
}  // namespace detail

// Calls the collective with NCCL's argument meanings (count as in bandwidth.hpp's Shape::count).
// op is ignored by collectives that do not reduce, root by those without one. The contract gives
// every backend an Algorithm on all_reduce; the other collectives take it only from backends
// that offer it (the host backend does), and otherwise it must be automatic.
template <class Comm, class T>
void call_collective(Comm& comm, Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op,
                     int root, Algorithm algorithm) {
  static_assert(is_communicator_v<Comm>, "call_collective needs a chorus communicator (core/communicator.hpp)");
  if (collective != Collective::all_reduce && algorithm != Algorithm::automatic) {
    if constexpr (detail::takes_algorithm<Comm, T>::value) {
      switch (collective) {
        case Collective::reduce_scatter: comm.reduce_scatter(send, recv, count, op, algorithm); return;
        case Collective::all_gather: comm.all_gather(send, recv, count, algorithm); return;
        case Collective::broadcast: comm.broadcast(send, recv, count, root, algorithm); return;
        case Collective::reduce: comm.reduce(send, recv, count, op, root, algorithm); return;
        case Collective::all_to_all: comm.all_to_all(send, recv, count, algorithm); return;
        default: break;
      }
    } else {
      throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::bench::call_collective: this backend takes "
                                                                 "no algorithm for ", to_string(collective)));
    }
  }
  switch (collective) {
    case Collective::all_reduce: comm.all_reduce(send, recv, count, op, algorithm); return;
    case Collective::reduce_scatter: comm.reduce_scatter(send, recv, count, op); return;
    case Collective::all_gather: comm.all_gather(send, recv, count); return;
    case Collective::broadcast: comm.broadcast(send, recv, count, root); return;
    case Collective::reduce: comm.reduce(send, recv, count, op, root); return;
    case Collective::all_to_all: comm.all_to_all(send, recv, count); return;
  }
  throw Error(ErrorCode::invalid_argument, "chorus::bench::call_collective: unknown collective");
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
