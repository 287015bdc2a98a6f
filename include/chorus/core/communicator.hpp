// The communicator contract: the member functions every chorus backend's Comm has, with NCCL's
// semantics (docs/communicator.md). Generic code (the parallel layer, benchmarks, tests written
// once for every backend) is constrained on chorus::is_communicator_v<C>; each backend
// static_asserts check_communicator<C>(), which names the first missing member in its message.
//
// For element type T, count c, ranks n and Algorithm a (optional, default automatic):
//   int rank() const; int size() const;
//   all_reduce(const T* send, T* recv, c, ReduceOp[, a])
//   broadcast(const T* send, T* recv, c, int root)      reduce(const T* send, T* recv, c, ReduceOp, int root)
//   all_gather(const T* send, T* recv, c)               reduce_scatter(const T* send, T* recv, c, ReduceOp)
//   all_to_all(const T* send, T* recv, c)               send(const T*, c, int peer)   recv(T*, c, int peer)
//   barrier()                                           split(int color, int key) -> C
//   wait()
// and the same collectives and send/recv type-erased, with a DataType after the count, as NCCL
// and MPI take them: all_reduce(const void*, void*, c, DataType, ReduceOp[, a]), ...,
// send(const void*, c, DataType, peer), recv(void*, c, DataType, peer).
//
// Where the buffers live and when a result may be read (memory_space.hpp): memory_space_v<C> is host
// unless C declares `static constexpr MemorySpace memory_space = MemorySpace::device;`. On a host
// communicator a result may be read when the call returns, and wait() only refuses a null
// communicator; on a device communicator the call returns once its work is enqueued on the stream,
// and the result may be read after that work has run, as wait() or later work on the stream observes.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "algorithm.hpp"
#include "config.hpp"
#include "data_type.hpp"
#include "memory_space.hpp"
#include "reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN
namespace contract {

template <class, template <class> class, class = void>
struct detected : std::false_type {};
template <class C, template <class> class Expr>
struct detected<C, Expr, std::void_t<Expr<C>>> : std::true_type {};

template <class C>
C& comm();
template <class T>
T* ptr();

// The typed forms are probed with float; a backend's templates serve every chorus element type.
using T = float;
constexpr std::size_t n = 1;

template <class C> using rank_expr = std::enable_if_t<std::is_convertible<decltype(std::declval<const C&>().rank()), int>::value>;
template <class C> using size_expr = std::enable_if_t<std::is_convertible<decltype(std::declval<const C&>().size()), int>::value>;
template <class C> using all_reduce_expr = decltype(comm<C>().all_reduce(ptr<const T>(), ptr<T>(), n, ReduceOp::sum),
                                                    comm<C>().all_reduce(ptr<const T>(), ptr<T>(), n, ReduceOp::sum, Algorithm::ring));
template <class C> using broadcast_expr = decltype(comm<C>().broadcast(ptr<const T>(), ptr<T>(), n, 0));
template <class C> using reduce_expr = decltype(comm<C>().reduce(ptr<const T>(), ptr<T>(), n, ReduceOp::sum, 0));
template <class C> using all_gather_expr = decltype(comm<C>().all_gather(ptr<const T>(), ptr<T>(), n));
template <class C> using reduce_scatter_expr = decltype(comm<C>().reduce_scatter(ptr<const T>(), ptr<T>(), n, ReduceOp::sum));
template <class C> using all_to_all_expr = decltype(comm<C>().all_to_all(ptr<const T>(), ptr<T>(), n));
template <class C> using send_expr = decltype(comm<C>().send(ptr<const T>(), n, 0));
template <class C> using recv_expr = decltype(comm<C>().recv(ptr<T>(), n, 0));
template <class C> using barrier_expr = decltype(comm<C>().barrier());
template <class C> using wait_expr = decltype(comm<C>().wait());
template <class C> using split_expr = std::enable_if_t<std::is_same<decltype(comm<C>().split(0, 0)), C>::value>;

constexpr DataType t = DataType::float32;
template <class C> using erased_all_reduce_expr = decltype(comm<C>().all_reduce(ptr<const void>(), ptr<void>(), n, t, ReduceOp::sum),
                                                           comm<C>().all_reduce(ptr<const void>(), ptr<void>(), n, t, ReduceOp::sum, Algorithm::ring));
template <class C> using erased_broadcast_expr = decltype(comm<C>().broadcast(ptr<const void>(), ptr<void>(), n, t, 0));
template <class C> using erased_reduce_expr = decltype(comm<C>().reduce(ptr<const void>(), ptr<void>(), n, t, ReduceOp::sum, 0));
template <class C> using erased_all_gather_expr = decltype(comm<C>().all_gather(ptr<const void>(), ptr<void>(), n, t));
template <class C> using erased_reduce_scatter_expr = decltype(comm<C>().reduce_scatter(ptr<const void>(), ptr<void>(), n, t, ReduceOp::sum));
template <class C> using erased_all_to_all_expr = decltype(comm<C>().all_to_all(ptr<const void>(), ptr<void>(), n, t));
template <class C> using erased_send_expr = decltype(comm<C>().send(ptr<const void>(), n, t, 0));
template <class C> using erased_recv_expr = decltype(comm<C>().recv(ptr<void>(), n, t, 0));

// One row per requirement, so a failed check can say which member is missing.
template <class C>
struct Requirements {
  static constexpr bool rank = detected<C, rank_expr>::value;
  static constexpr bool size = detected<C, size_expr>::value;
  static constexpr bool all_reduce = detected<C, all_reduce_expr>::value;
  static constexpr bool broadcast = detected<C, broadcast_expr>::value;
  static constexpr bool reduce = detected<C, reduce_expr>::value;
  static constexpr bool all_gather = detected<C, all_gather_expr>::value;
  static constexpr bool reduce_scatter = detected<C, reduce_scatter_expr>::value;
  static constexpr bool all_to_all = detected<C, all_to_all_expr>::value;
  static constexpr bool send = detected<C, send_expr>::value;
  static constexpr bool recv = detected<C, recv_expr>::value;
  static constexpr bool barrier = detected<C, barrier_expr>::value;
  static constexpr bool split = detected<C, split_expr>::value;
  static constexpr bool wait = detected<C, wait_expr>::value;
  static constexpr bool typed = rank && size && all_reduce && broadcast && reduce && all_gather && reduce_scatter &&
                                all_to_all && send && recv && barrier && split;

  static constexpr bool erased_all_reduce = detected<C, erased_all_reduce_expr>::value;
  static constexpr bool erased_broadcast = detected<C, erased_broadcast_expr>::value;
  static constexpr bool erased_reduce = detected<C, erased_reduce_expr>::value;
  static constexpr bool erased_all_gather = detected<C, erased_all_gather_expr>::value;
  static constexpr bool erased_reduce_scatter = detected<C, erased_reduce_scatter_expr>::value;
  static constexpr bool erased_all_to_all = detected<C, erased_all_to_all_expr>::value;
  static constexpr bool erased_send = detected<C, erased_send_expr>::value;
  static constexpr bool erased_recv = detected<C, erased_recv_expr>::value;
  static constexpr bool erased = erased_all_reduce && erased_broadcast && erased_reduce && erased_all_gather &&
                                 erased_reduce_scatter && erased_all_to_all && erased_send && erased_recv;
};

}  // namespace contract

template <class C>
inline constexpr bool is_communicator_v =
    contract::Requirements<C>::typed && contract::Requirements<C>::erased && contract::Requirements<C>::wait;

template <class C>
struct is_communicator : std::bool_constant<is_communicator_v<C>> {};

// static_assert(check_communicator<MyComm>()) in a backend: on failure the compiler prints the
// message of the first requirement that is not met.
template <class C>
constexpr bool check_communicator() {
  using R = contract::Requirements<C>;
  static_assert(R::rank, "chorus communicator contract: missing `int rank() const`");
  static_assert(R::size, "chorus communicator contract: missing `int size() const`");
  static_assert(R::all_reduce, "chorus communicator contract: missing typed `all_reduce(const T*, T*, size_t, ReduceOp[, Algorithm])`");
  static_assert(R::broadcast, "chorus communicator contract: missing typed `broadcast(const T*, T*, size_t, int root)`");
  static_assert(R::reduce, "chorus communicator contract: missing typed `reduce(const T*, T*, size_t, ReduceOp, int root)`");
  static_assert(R::all_gather, "chorus communicator contract: missing typed `all_gather(const T*, T*, size_t)`");
  static_assert(R::reduce_scatter, "chorus communicator contract: missing typed `reduce_scatter(const T*, T*, size_t, ReduceOp)`");
  static_assert(R::all_to_all, "chorus communicator contract: missing typed `all_to_all(const T*, T*, size_t)`");
  static_assert(R::send, "chorus communicator contract: missing typed `send(const T*, size_t, int peer)`");
  static_assert(R::recv, "chorus communicator contract: missing typed `recv(T*, size_t, int peer)`");
  static_assert(R::barrier, "chorus communicator contract: missing `barrier()`");
  static_assert(R::split, "chorus communicator contract: missing `split(int color, int key)` returning the communicator type");
  static_assert(R::wait, "chorus communicator contract: missing `wait()` (returns once the calls made so far have completed; on a host communicator a check that it is not null)");
  static_assert(R::erased_all_reduce, "chorus communicator contract: missing type-erased `all_reduce(const void*, void*, size_t, DataType, ReduceOp[, Algorithm])`");
  static_assert(R::erased_broadcast, "chorus communicator contract: missing type-erased `broadcast(const void*, void*, size_t, DataType, int root)`");
  static_assert(R::erased_reduce, "chorus communicator contract: missing type-erased `reduce(const void*, void*, size_t, DataType, ReduceOp, int root)`");
  static_assert(R::erased_all_gather, "chorus communicator contract: missing type-erased `all_gather(const void*, void*, size_t, DataType)`");
  static_assert(R::erased_reduce_scatter, "chorus communicator contract: missing type-erased `reduce_scatter(const void*, void*, size_t, DataType, ReduceOp)`");
  static_assert(R::erased_all_to_all, "chorus communicator contract: missing type-erased `all_to_all(const void*, void*, size_t, DataType)`");
  static_assert(R::erased_send, "chorus communicator contract: missing type-erased `send(const void*, size_t, DataType, int peer)`");
  static_assert(R::erased_recv, "chorus communicator contract: missing type-erased `recv(void*, size_t, DataType, int peer)`");
  return is_communicator_v<C>;
}

CHORUS_NAMESPACE_END  // namespace chorus
