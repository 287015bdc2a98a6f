// The collective calls every communicator offers, written once: each collective typed (the DataType comes
// from T) and type-erased (as NCCL and MPI take it), and typed send/recv. Every call becomes one
// CollectiveArgs handed to the backend, so the six signatures, their defaults and the argument order live
// here and nowhere else.
//
// A backend derives from CollectiveFront<Itself> (befriending it if its hooks are private) and provides
//   template <class T> void typed_collective(const CollectiveArgs&);  // T known: may compile only T's code
//   void erased_collective(const CollectiveArgs&);                     // T known only as args.type
//   void send(const void*, std::size_t, DataType, int); void recv(void*, std::size_t, DataType, int);
// and says `using CollectiveFront<Itself>::send; using CollectiveFront<Itself>::recv;` (its own erased
// send/recv would otherwise hide the typed ones).
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/reduce_op.hpp"
#include "call_check.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

// Keeps a parameter out of deduction, so a literal nullptr may stand for the buffer a rooted collective
// ignores (broadcast's send, reduce's recv off the root) and T comes from the other buffer.
template <class T>
struct same {
  using type = T;
};
template <class T>
using same_t = typename same<T>::type;

// ElementType<T>::value is the DataType of a typed call's element: chorus's ten types by default; the NCCL
// backend also maps CUDA's __half and __nv_bfloat16.
template <class Derived, template <class> class ElementType = data_type_of>
class CollectiveFront {
 public:
  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    typed<T>({Collective::all_reduce, type_of<T>(), send, recv, count, op, 0, algorithm});
  }
  template <class T>
  void broadcast(const same_t<T>* send, T* recv, std::size_t count, int root, Algorithm algorithm = Algorithm::automatic) {
    typed<T>({Collective::broadcast, type_of<T>(), send, recv, count, ReduceOp::sum, root, algorithm});
  }
  template <class T>
  void reduce(const T* send, same_t<T>* recv, std::size_t count, ReduceOp op, int root, Algorithm algorithm = Algorithm::automatic) {
    typed<T>({Collective::reduce, type_of<T>(), send, recv, count, op, root, algorithm});
  }
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t send_count, Algorithm algorithm = Algorithm::automatic) {
    typed<T>({Collective::all_gather, type_of<T>(), send, recv, send_count, ReduceOp::sum, 0, algorithm});
  }
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t recv_count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    typed<T>({Collective::reduce_scatter, type_of<T>(), send, recv, recv_count, op, 0, algorithm});
  }
  template <class T>
  void all_to_all(const T* send, T* recv, std::size_t count_per_peer, Algorithm algorithm = Algorithm::automatic) {
    typed<T>({Collective::all_to_all, type_of<T>(), send, recv, count_per_peer, ReduceOp::sum, 0, algorithm});
  }
  template <class T>
  void send(const T* data, std::size_t count, int peer) {
    self().send(static_cast<const void*>(data), count, type_of<T>(), peer);
  }
  template <class T>
  void recv(T* data, std::size_t count, int peer) {
    self().recv(static_cast<void*>(data), count, type_of<T>(), peer);
  }

  void all_reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                  Algorithm algorithm = Algorithm::automatic) {
    self().erased_collective({Collective::all_reduce, type, send, recv, count, op, 0, algorithm});
  }
  void broadcast(const void* send, void* recv, std::size_t count, DataType type, int root, Algorithm algorithm = Algorithm::automatic) {
    self().erased_collective({Collective::broadcast, type, send, recv, count, ReduceOp::sum, root, algorithm});
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic) {
    self().erased_collective({Collective::reduce, type, send, recv, count, op, root, algorithm});
  }
  void all_gather(const void* send, void* recv, std::size_t send_count, DataType type, Algorithm algorithm = Algorithm::automatic) {
    self().erased_collective({Collective::all_gather, type, send, recv, send_count, ReduceOp::sum, 0, algorithm});
  }
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic) {
    self().erased_collective({Collective::reduce_scatter, type, send, recv, recv_count, op, 0, algorithm});
  }
  void all_to_all(const void* send, void* recv, std::size_t count_per_peer, DataType type, Algorithm algorithm = Algorithm::automatic) {
    self().erased_collective({Collective::all_to_all, type, send, recv, count_per_peer, ReduceOp::sum, 0, algorithm});
  }

 protected:
  CollectiveFront() = default;
  ~CollectiveFront() = default;

 private:
  template <class T>
  static constexpr DataType type_of() {
    return ElementType<std::remove_cv_t<T>>::value;
  }
  template <class T>
  void typed(const CollectiveArgs& args) {
    self().template typed_collective<T>(args);
  }
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
