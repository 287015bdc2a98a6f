// The communicator contract's call forms (core/communicator.hpp: typed and type-erased collectives,
// send and recv) for the multi-process CUDA communicator, BasicIpcComm<Device> and its View
// (cuda/basic_ipc_comm.hpp: cuda::IpcComm on a GPU, twin::IpcRank on the CPU twin), which derive from
// IpcCalls and supply two members. Plain C++17.
//
//   template <class T>
//   void run_collective(const runtime::CollectiveArgs& args);  // checks, then launches this rank's blocks
//   void run_transfer(const IpcPeerCall& call);                 // checks, then sends or receives (or queues
//                                                               // it inside group())
// The Algorithm of a collective maps to a kernel through kernel_for_call (kernel_choice.hpp), as cuda::Team's
// calls and the per-rank views choose it.
#pragma once

#include <cstddef>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/collective_front.hpp"
#include "kernel_choice.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// One send or receive of this rank.
struct IpcPeerCall {
  bool sending;      // send(data, ...) or recv(data, ...)
  const void* data;  // recv: the caller's writable buffer
  std::size_t count;
  DataType type;
  int peer;
};

// The kernel a collective runs for `algorithm` (kernel_for_call: the one mapping every device communicator
// uses); an Algorithm with no kernel for the collective is chorus::Error naming the call and the rank.
inline kernel::KernelAlgorithm ipc_kernel_of(const char* call, int rank, Collective collective, Algorithm algorithm,
                                             std::size_t bytes, int ranks) {
  try {
    return kernel_for_call(collective, algorithm, bytes, ranks);
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

// The contract's forms come from runtime::CollectiveFront (every backend's); IpcCalls routes them to the two
// members above, so the GPU communicator, its stream views and the twin share one mapping.
template <class Self>
class IpcCalls : public runtime::CollectiveFront<Self> {
 public:
  using runtime::CollectiveFront<Self>::send;
  using runtime::CollectiveFront<Self>::recv;
  void send(const void* data, std::size_t count, DataType type, int peer) {
    self().run_transfer(IpcPeerCall{true, data, count, type, peer});
  }
  void recv(void* data, std::size_t count, DataType type, int peer) {
    self().run_transfer(IpcPeerCall{false, data, count, type, peer});
  }

  // CollectiveFront's hooks. run_collective is a template on the element type, so a program compiles the
  // kernels of the types it calls only; the type-erased forms dispatch over all ten (an invalid args.type
  // reaches run_collective<float>, whose check refuses it naming the call and the rank).
  template <class T>
  void typed_collective(const runtime::CollectiveArgs& args) {
    self().template run_collective<T>(args);
  }
  void erased_collective(const runtime::CollectiveArgs& args) {
    visit_type(args.type, [&](auto zero) { self().template run_collective<decltype(zero)>(args); });
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
