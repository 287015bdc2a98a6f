// The communicator contract's call forms (core/communicator.hpp: typed and type-erased collectives,
// send and recv) for the multi-process CUDA communicator and its CPU twin, written once: cuda::IpcComm,
// IpcComm::View (cuda/ipc_comm.cuh) and twin::IpcRank (cuda/twin/ipc_twin.hpp) derive from IpcCalls and
// supply two members, so the twin proves the same mapping the GPU runs. Plain C++17.
//
//   void run_collective(const runtime::CollectiveArgs& args);  // checks, then launches this rank's blocks
//   void run_transfer(const IpcPeerCall& call);                 // checks, then sends or receives (or queues
//                                                               // it inside group())
// The Algorithm of a collective maps to a kernel through kernel_for (kernel_choice.hpp), as cuda::Team's
// calls and the per-rank views choose it.
#pragma once

#include <cstddef>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_check.hpp"
#include "kernel_choice.hpp"

namespace chorus::cuda {

// One send or receive of this rank.
struct IpcPeerCall {
  bool sending;      // send(data, ...) or recv(data, ...)
  const void* data;  // recv: the caller's writable buffer
  std::size_t count;
  DataType type;
  int peer;
};

namespace ipc_calls_detail {
// Keeps a parameter out of deduction, so a literal nullptr may stand for the buffer a rooted collective
// ignores (broadcast's send, reduce's recv off the root) and T comes from the other.
template <class T>
struct same_type {
  using type = T;
};
template <class T>
using same_t = typename same_type<T>::type;
}  // namespace ipc_calls_detail

// The kernel a collective runs for `algorithm`, as cuda::Team's calls choose it; an Algorithm with no
// kernel for the collective is chorus::Error naming the call and the rank.
inline kernel::KernelAlgorithm ipc_kernel_of(const char* call, int rank, Collective collective, Algorithm algorithm,
                                             std::size_t bytes, int ranks) {
  try {
    return collective == Collective::all_reduce ? kernel_for(algorithm, bytes, ranks) : kernel_for(collective, algorithm, bytes);
  } catch (const Error& e) {
    throw make_error(e.code(), call, rank, e.what());
  }
}

// A null communicator (moved from, default-constructed, or from split with a negative colour) has no rank
// to name and no memory: every call on it is this chorus::Error, never a null dereference.
inline void check_ipc_live(const char* call, bool live) {
  if (!live) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::", call, ": called on a null communicator (moved from, default-constructed, "
                                       "or from split with a negative colour)"));
  }
}

template <class Self>
class IpcCalls {
 public:
  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::all_reduce, data_type_v<T>, send, recv, count, op, 0, algorithm});
  }
  template <class T>
  void broadcast(const ipc_calls_detail::same_t<T>* send, T* recv, std::size_t count, int root, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::broadcast, data_type_v<T>, send, recv, count, ReduceOp::sum, root, algorithm});
  }
  template <class T>
  void reduce(const T* send, ipc_calls_detail::same_t<T>* recv, std::size_t count, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::reduce, data_type_v<T>, send, recv, count, op, root, algorithm});
  }
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t send_count, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::all_gather, data_type_v<T>, send, recv, send_count, ReduceOp::sum, 0, algorithm});
  }
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t recv_count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::reduce_scatter, data_type_v<T>, send, recv, recv_count, op, 0, algorithm});
  }
  template <class T>
  void all_to_all(const T* send, T* recv, std::size_t count_per_peer, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::all_to_all, data_type_v<T>, send, recv, count_per_peer, ReduceOp::sum, 0, algorithm});
  }
  template <class T>
  void send(const T* data, std::size_t count, int peer) {
    self().run_transfer(IpcPeerCall{true, data, count, data_type_v<T>, peer});
  }
  template <class T>
  void recv(T* data, std::size_t count, int peer) {
    self().run_transfer(IpcPeerCall{false, data, count, data_type_v<T>, peer});
  }

  // Type-erased, as NCCL takes them.
  void all_reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                  Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::all_reduce, type, send, recv, count, op, 0, algorithm});
  }
  void broadcast(const void* send, void* recv, std::size_t count, DataType type, int root, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::broadcast, type, send, recv, count, ReduceOp::sum, root, algorithm});
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::reduce, type, send, recv, count, op, root, algorithm});
  }
  void all_gather(const void* send, void* recv, std::size_t send_count, DataType type, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::all_gather, type, send, recv, send_count, ReduceOp::sum, 0, algorithm});
  }
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::reduce_scatter, type, send, recv, recv_count, op, 0, algorithm});
  }
  void all_to_all(const void* send, void* recv, std::size_t count_per_peer, DataType type, Algorithm algorithm = Algorithm::automatic) {
    self().run_collective({Collective::all_to_all, type, send, recv, count_per_peer, ReduceOp::sum, 0, algorithm});
  }
  void send(const void* data, std::size_t count, DataType type, int peer) {
    self().run_transfer(IpcPeerCall{true, data, count, type, peer});
  }
  void recv(void* data, std::size_t count, DataType type, int peer) {
    self().run_transfer(IpcPeerCall{false, data, count, type, peer});
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

}  // namespace chorus::cuda
