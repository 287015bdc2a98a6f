// nccl::Comm::View: one communicator on one CUDA stream, with exactly the communicator contract's
// members (core/communicator.hpp), so generic code never sees a stream. Every call is stream-ordered:
// it checks its arguments on the host (runtime/call_check.hpp, before anything reaches NCCL), enqueues
// the NCCL work on the stream and returns; the work is done when the stream reaches it, which
// `wait()` (bounded, and only for this communicator's work, not the rest of the stream) or any later
// stream-ordered use observes.
//
//   auto view = comm.on(stream);
//   view.all_reduce(grad, grad, n, chorus::ReduceOp::avg);    // device pointers
//   view.wait();                                              // or keep using the stream
//
// What NCCL does differently from chorus's own backends (docs/nccl.md):
//   - NCCL picks its algorithm: anything but Algorithm::automatic is `unsupported` (NCCL_ALGO sets it);
//   - all_to_all is grouped ncclSend/ncclRecv (a copy of the input first when in place); barrier is an
//     all-reduce of one int, as NCCL users write it; send and recv are ncclSend and ncclRecv;
//   - the order of floating-point sums is NCCL's, and avg on floats multiplies by 1/size before summing
//     (NCCL's PreMulSum), so results are not bit-identical to the host backend's;
//   - ranks that disagree are not detected: NCCL hangs, and wait() times out and aborts;
//   - calls may be captured into a CUDA graph (NCCL supports it); wait() during a capture is refused
//     (a host wait cannot be captured) and leaves the communicator as it was.
// In a build with NVTX3 (runtime/nvtx_range.hpp) each call that passes its checks is an NVTX range,
// e.g. "chorus::all_reduce 64 MiB float32 sum nccl": the algorithm is NCCL's to choose, so it says nccl.
// A view holds a share of the communicator: a view returned by split owns the new communicator.
#pragma once

#include "nccl_header.hpp"

#include <cstddef>
#include <memory>
#include <utility>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/memory_space.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/collective_front.hpp"
#include "../runtime/nvtx_range.hpp"
#include "../runtime/validate.hpp"
#include "create.hpp"
#include "data_types.hpp"
#include "group.hpp"
#include "handle.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {
template <class Api>
class BasicComm;

template <class Api>
class BasicView : public runtime::CollectiveFront<BasicView<Api>, element_type> {
 public:
  // Buffers are device memory; a call completes when its stream reaches it (wait() observes it).
  static constexpr MemorySpace memory_space = MemorySpace::device;

  BasicView() = default;  // a null communicator
  BasicView(std::shared_ptr<detail::Handle<Api>> handle, cudaStream_t stream) : handle_(std::move(handle)), stream_(stream) {}

  int rank() const { return handle_ ? handle_->rank() : -1; }
  int size() const { return handle_ ? handle_->size() : 0; }
  explicit operator bool() const { return handle_ != nullptr; }
  cudaStream_t stream() const { return stream_; }

  // all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, typed (chorus's element types and
  // CUDA's __half, __nv_bfloat16) and type-erased, and typed send/recv: runtime::CollectiveFront.
  using runtime::CollectiveFront<BasicView<Api>, element_type>::send;
  using runtime::CollectiveFront<BasicView<Api>, element_type>::recv;

  void send(const void* data, std::size_t count, DataType type, int peer) {
    detail::Handle<Api>& h = ready("send");
    const ncclDataType_t nccl_type = checked_peer_call(h, "send", data, count, type, peer);
    const runtime::NvtxRange range("send", count * size_of(type), type, peer);
    if (count == 0) return;
    h.note("send");
    Work work(h, stream_, "send");
    enqueue(h, "send", "ncclSend", [&] { return Api::send(data, count, nccl_type, peer, h.raw(), stream_); });
    work.done();
  }
  void recv(void* data, std::size_t count, DataType type, int peer) {
    detail::Handle<Api>& h = ready("recv");
    const ncclDataType_t nccl_type = checked_peer_call(h, "recv", data, count, type, peer);
    const runtime::NvtxRange range("recv", count * size_of(type), type, peer);
    if (count == 0) return;
    h.note("recv");
    Work work(h, stream_, "recv");
    enqueue(h, "recv", "ncclRecv", [&] { return Api::recv(data, count, nccl_type, peer, h.raw(), stream_); });
    work.done();
  }

  // An all-reduce of one int on the stream: work enqueued after it starts once every rank has reached it.
  // The int is the communicator's own, made on its first barrier (Handle::barrier_flag).
  void barrier() {
    detail::Handle<Api>& h = ready("barrier");
    const runtime::NvtxRange range(call_of(runtime::CallKind::barrier), 0, kNcclChooses);
    h.note("barrier");
    Work work(h, stream_, "barrier");
    void* flag = h.barrier_flag(stream_, "barrier");
    enqueue(h, "barrier", "ncclAllReduce", [&] { return Api::all_reduce(flag, flag, 1, ncclInt32, ncclSum, h.raw(), stream_); });
    work.done();
  }

  // ncclCommSplit: a view of the new communicator on the same stream (null for a negative colour).
  BasicView split(int color, int key) {
    ready("split");
    const runtime::NvtxRange range(call_of(runtime::CallKind::split), 0, kNcclChooses);
    return BasicView(detail::split<Api>(handle_, color, key), stream_);
  }

  // Until this communicator's work enqueued so far (on any stream, outside graph captures) is done; not
  // the rest of the stream: work the caller queued there before or after it is not waited for (a
  // stream-ordered use, or cudaStreamSynchronize, sees that). Bounded by CHORUS_TIMEOUT_MS from when the
  // stream reaches this communicator's oldest unfinished call, after which the communicator is aborted
  // and chorus::Error (timeout) names the last call; the stream reaching it is bounded by
  // CHORUS_KERNEL_TIMEOUT_MS, which throws without aborting (Handle::wait). Refused while the
  // view's stream is being captured.
  void wait() {
    runtime::check_comm("wait", handle_ != nullptr);
    handle_->wait(stream_, "wait");
  }

 private:
  friend class BasicComm<Api>;  // a Comm made from a split view takes over its share

  // The algorithm in NVTX range names: NCCL picks it inside the call, per size and topology.
  static constexpr const char* kNcclChooses = "nccl";

  static runtime::CallDescriptor call_of(runtime::CallKind kind) {
    runtime::CallDescriptor call;
    call.kind = kind;
    return call;
  }

  detail::Handle<Api>& ready(const char* call) {
    runtime::check_comm(call, handle_ != nullptr);
    detail::Handle<Api>& h = *handle_;
    h.ensure_usable(call);
    if (h.pending()) {
      throw make_error(ErrorCode::invalid_argument, call, h.name(),
                       "the communicator is still being created: end the nccl::Group that creates it first");
    }
    return h;
  }

  // One chorus call's stream work, from its first enqueue to its last: on the communicator's device (the
  // legacy stream is a device's own), and marked by the events a view's wait() polls (Handle::begin_work;
  // nothing is marked while the stream is being captured). done() after the last enqueue; a call that
  // throws marks no end.
  class Work {
   public:
    Work(detail::Handle<Api>& h, cudaStream_t stream, const char* call)
        : h_(h), stream_(stream), call_(call), on_device_(h.device(), h.name(), call), marked_(h.begin_work(stream, call)) {}
    Work(const Work&) = delete;
    Work& operator=(const Work&) = delete;
    void done() {
      if (marked_) h_.end_work(stream_, call_, detail::GroupState<Api>::here().depth > 0);
    }

   private:
    detail::Handle<Api>& h_;
    cudaStream_t stream_;
    const char* call_;
    detail::DeviceScope<Api> on_device_;
    bool marked_;
  };

  // One NCCL call (the caller has noted the chorus call): joins an open group, which then settles this
  // communicator at its end, else settles ncclInProgress now.
  template <class Call>
  void enqueue(detail::Handle<Api>& h, const char* call, const char* function, Call&& nccl_call) {
    detail::GroupState<Api>& group = detail::GroupState<Api>::here();
    if (group.depth > 0) group.join(handle_);
    const ncclResult_t result = nccl_call();
    if (result == ncclInProgress && group.depth > 0) return;  // the group's end settles it
    h.check(result, call, function);
  }

  friend class runtime::CollectiveFront<BasicView<Api>, element_type>;
  template <class T>
  void typed_collective(const runtime::CollectiveArgs& args) {
    collective(args);
  }
  void erased_collective(const runtime::CollectiveArgs& args) { collective(args); }
  void collective(const runtime::CollectiveArgs& args) {
    const char* name = traits(args.collective).name;
    detail::Handle<Api>& h = ready(name);
    const runtime::CheckedCall checked = runtime::check_collective(args, h.name(), h.size());
    if (args.algorithm != Algorithm::automatic) {
      throw make_error(ErrorCode::unsupported, name, h.name(), "NCCL chooses its own algorithm; ", to_string(args.algorithm),
                       " cannot be forced per call (set NCCL_ALGO in the environment, or use a chorus backend)");
    }
    const int version = h.version(name);
    const ncclDataType_t type = to_nccl(args.type, version, name, h.name());
    // avg over one rank is the input itself, as sum over one rank is: ask NCCL for sum. NCCL 2.28.9's
    // one-rank float64 avg, out of place, wrote garbage from element 65536 on (counts 65537 and 65538;
    // not 65536 or 10^6, not in place, not float32, not sum), seen with plain NCCL calls on an H200
    // (docs/gpu-validation.md, 2026-12-04).
    const ncclRedOp_t op = !traits(args.collective).reduces               ? ncclSum
                           : args.op == ReduceOp::avg && h.size() == 1 ? ncclSum
                                                                         : to_nccl(args.op, version, name, h.name());
    const runtime::NvtxRange range(checked.descriptor, args.count * checked.element_size, kNcclChooses);
    if (args.count == 0) return;  // nothing moves; every rank skips alike, since counts must agree
    h.note(name);
    Work work(h, stream_, name);
    const void* send = args.send;
    void* recv = args.recv;
    const std::size_t count = args.count;
    switch (args.collective) {
      case Collective::all_reduce:
        enqueue(h, name, "ncclAllReduce", [&] { return Api::all_reduce(send, recv, count, type, op, h.raw(), stream_); });
        break;
      case Collective::broadcast:
        enqueue(h, name, "ncclBroadcast", [&] { return Api::broadcast(send, recv, count, type, args.root, h.raw(), stream_); });
        break;
      case Collective::reduce:
        enqueue(h, name, "ncclReduce", [&] { return Api::reduce(send, recv, count, type, op, args.root, h.raw(), stream_); });
        break;
      case Collective::all_gather:
        enqueue(h, name, "ncclAllGather", [&] { return Api::all_gather(send, recv, count, type, h.raw(), stream_); });
        break;
      case Collective::reduce_scatter:
        enqueue(h, name, "ncclReduceScatter", [&] { return Api::reduce_scatter(send, recv, count, type, op, h.raw(), stream_); });
        break;
      case Collective::all_to_all:
        grouped_all_to_all(h, send, recv, count, type, checked);
        break;
    }
    work.done();
  }

  // One ncclSend and one ncclRecv per peer (this rank included) in a group. In place, the sends read a
  // stream-ordered copy of the input, since the receives overwrite it while the sends still read it;
  // the copy is freed once the group's kernels are on the stream.
  void grouped_all_to_all(detail::Handle<Api>& h, const void* send, void* recv, std::size_t count, ncclDataType_t type,
                  const runtime::CheckedCall& checked) {
    const char* name = "all_to_all";
    const std::size_t block = count * checked.element_size;
    const std::size_t bytes = block * static_cast<std::size_t>(h.size());
    void* staging = nullptr;  // on the communicator's device: the caller's Work made it current
    if (checked.buffers_alias) {
      h.check_cuda(Api::malloc_async(&staging, bytes, stream_), name, "cudaMallocAsync");
      const cudaError_t copied = Api::copy_async(staging, send, bytes, stream_);
      if (copied != cudaSuccess) Api::free_async(staging, stream_);
      h.check_cuda(copied, name, "cudaMemcpyAsync");
      send = staging;
    }
    const auto* from = static_cast<const unsigned char*>(send);
    auto* to = static_cast<unsigned char*>(recv);
    try {
      detail::group_start<Api>(name, h.name());
      try {
        for (int peer = 0; peer < h.size(); ++peer) {
          const std::size_t offset = block * static_cast<std::size_t>(peer);
          enqueue(h, name, "ncclSend", [&] { return Api::send(from + offset, count, type, peer, h.raw(), stream_); });
          enqueue(h, name, "ncclRecv", [&] { return Api::recv(to + offset, count, type, peer, h.raw(), stream_); });
        }
      } catch (...) {
        try {
          detail::group_end<Api>(name, h.name());
        } catch (...) {  // the first failure is the one to report
        }
        throw;
      }
      detail::group_end<Api>(name, h.name());
    } catch (...) {
      if (staging != nullptr) detail::free_after_launch<Api>(staging, stream_);
      throw;
    }
    if (staging != nullptr) h.check_cuda(detail::free_after_launch<Api>(staging, stream_), name, "cudaFreeAsync");
  }

  // send's and recv's argument checks; returns the NCCL type.
  ncclDataType_t checked_peer_call(detail::Handle<Api>& h, const char* name, const void* data, std::size_t count,
                                   DataType type, int peer) {
    runtime::check_point_to_point(name, h.name(), h.size(), data, count, type, peer);
    return to_nccl(type, h.version(name), name, h.name());
  }

  std::shared_ptr<detail::Handle<Api>> handle_;
  cudaStream_t stream_ = nullptr;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
