// CudaDevice: a real GPU as the Device the CUDA drivers are written over (device/device.hpp), the only
// host code of chorus's own GPU backend that needs nvcc. Every member is a thin call into the CUDA runtime
// that turns a failure into chorus::Error naming the call, the rank and CUDA's message; everything above
// it (BasicTeam, the per-rank views) is shared with the CPU twin (device/twin_device.hpp), which runs it
// under the sanitizers. Run on one H200 on 2026-12-04, not yet on several GPUs (docs/gpu-validation.md).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/data_type.hpp"
#include "../../core/error.hpp"
#include "../../core/floating_copy.hpp"
#include "../collective_kernel.cuh"
#include "../floating_copy_kernel.cuh"
#include "../ipc_record.hpp"
#include "../launch.cuh"
#include "../runtime_check.hpp"
#include "../transfer_kernel.cuh"

CHORUS_NAMESPACE_BEGIN namespace cuda {

class CudaDevice {
 public:
  using Stream = cudaStream_t;  // null: the legacy default stream
  using Event = cudaEvent_t;

  static constexpr const char* kName = "cuda";
  static constexpr int kMinThreads = 32;
  static constexpr int kMaxThreads = 1024;
  static constexpr int kDefaultBlocks = 8;
  static constexpr int kDefaultThreads = 512;
  static constexpr std::size_t kDefaultStagingBytes = 8u << 20;
  static constexpr std::size_t kDefaultLlBytes = 1u << 20;
  static constexpr std::size_t kDefaultFifoSlotBytes = 128u << 10;

  explicit CudaDevice(int ordinal = 0) : ordinal_(ordinal) {}

  int ordinal() const { return ordinal_; }
  std::string bus_id(const char* call, int rank) const {
    char busid[32] = {};
    check_cuda(cudaDeviceGetPCIBusId(busid, sizeof busid, ordinal_), call, rank, "cudaDeviceGetPCIBusId");
    return busid;
  }
  void check_cooperative(const char* call, int rank) const {
    int cooperative = 0;
    check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, ordinal_), call, rank, "cudaDeviceGetAttribute");
    if (!cooperative) {
      throw make_error(ErrorCode::unsupported, call, rank, "device ", ordinal_,
                       " cannot launch cooperatively, so co-residency of the blocks is not guaranteed");
    }
  }
  int max_resident_blocks(int ranks, const char* call, int rank) const { return cuda::max_resident_blocks(ordinal_, ranks, call, rank); }
  void enable_peer_access(int peer, const char* call, int rank) const {
    if (peer == ordinal_) return;
    select(call, rank);
    int can = 0;
    check_cuda(cudaDeviceCanAccessPeer(&can, ordinal_, peer), call, rank, "cudaDeviceCanAccessPeer");
    if (!can) throw make_error(ErrorCode::unsupported, call, rank, "device ", ordinal_, " cannot access device ", peer, " (no peer access)");
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // not sticky: clear it so later checks do not see it
    } else {
      check_cuda(status, call, rank, "cudaDeviceEnablePeerAccess");
    }
  }

  void* allocate(std::size_t bytes, const char* call, int rank) const {
    select(call, rank);
    void* pointer = nullptr;
    check_cuda(cudaMalloc(&pointer, bytes == 0 ? 1 : bytes), call, rank, "cudaMalloc");
    return pointer;
  }
  void free(void* pointer) const noexcept {
    if (pointer == nullptr) return;
    cudaSetDevice(ordinal_);
    cudaFree(pointer);
  }
  void memset(void* pointer, int value, std::size_t bytes, const char* call, int rank) const {
    select(call, rank);
    check_cuda(cudaMemset(pointer, value, bytes), call, rank, "cudaMemset");
  }
  void copy(void* to, const void* from, std::size_t bytes, const char* call, int rank) const {
    select(call, rank);
    check_cuda(cudaMemcpy(to, from, bytes, cudaMemcpyDefault), call, rank, "cudaMemcpy");
  }
  struct Mapped {
    void* host;
    void* device;
  };
  Mapped allocate_mapped(std::size_t bytes, const char* call, int rank) const {
    select(call, rank);
    Mapped mapped{nullptr, nullptr};
    check_cuda(cudaHostAlloc(&mapped.host, bytes, cudaHostAllocMapped | cudaHostAllocPortable), call, rank, "cudaHostAlloc");
    std::memset(mapped.host, 0, bytes);
    const cudaError_t status = cudaHostGetDevicePointer(&mapped.device, mapped.host, 0);
    if (status != cudaSuccess) cudaFreeHost(mapped.host);
    check_cuda(status, call, rank, "cudaHostGetDevicePointer");
    return mapped;
  }
  void free_mapped(void* host) const noexcept {
    if (host != nullptr) cudaFreeHost(host);
  }
  // The host writes a word of device memory (here or a peer's, mapped) while kernels may run: through a
  // non-blocking stream of its own, so neither the legacy stream nor a busy user stream delays it.
  void write_word(std::uint32_t* word, std::uint32_t value, const char* call, int rank) const {
    select(call, rank);
    cudaStream_t side = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), call, rank, "cudaStreamCreateWithFlags");
    const cudaError_t copied = cudaMemcpyAsync(word, &value, sizeof value, cudaMemcpyHostToDevice, side);
    const cudaError_t synced = copied == cudaSuccess ? cudaStreamSynchronize(side) : copied;
    cudaStreamDestroy(side);
    check_cuda(synced, call, rank, "cudaMemcpyAsync");
  }
  std::uint32_t read_word(const std::uint32_t* word, const char* call, int rank) const {
    select(call, rank);
    cudaStream_t side = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), call, rank, "cudaStreamCreateWithFlags");
    std::uint32_t value = 0;
    const cudaError_t copied = cudaMemcpyAsync(&value, word, sizeof value, cudaMemcpyDeviceToHost, side);
    const cudaError_t synced = copied == cudaSuccess ? cudaStreamSynchronize(side) : copied;
    cudaStreamDestroy(side);
    check_cuda(synced, call, rank, "cudaMemcpyAsync");
    return value;
  }
  void synchronize(const char* call, int rank) const {
    select(call, rank);
    check_cuda(cudaDeviceSynchronize(), call, rank, "cudaDeviceSynchronize");
  }

  Event create_event(const char* call, int rank) const {
    select(call, rank);
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), call, rank, "cudaEventCreate");
    return event;
  }
  // The small elementwise kernel the device gradient reducer enqueues (parallel/device_gradient_reducer.hpp):
  // n floating elements src -> dst, divided by `divisor`, on `stream` (floating_copy_kernel.cuh).
  void copy_floating(const void* src, DataType src_type, void* dst, DataType dst_type, std::size_t n, double divisor,
                     Stream stream, const char* call, int rank) const {
    if (n == 0) return;
    select(call, rank);
    launch_floating_copy(src, src_type, dst, dst_type, n, divisor, stream);
    check_cuda(cudaGetLastError(), call, rank, "floating_copy_kernel launch");
  }
  void destroy_event(Event event) const noexcept {
    if (event != nullptr) cudaEventDestroy(event);
  }
  void record(Event event, Stream stream, const char* call, int rank) const {
    check_cuda(cudaEventRecord(event, stream), call, rank, "cudaEventRecord");
  }
  void stream_wait(Stream stream, Event event, const char* call, int rank) const {
    check_cuda(cudaStreamWaitEvent(stream, event, 0), call, rank, "cudaStreamWaitEvent");
  }
  bool query(Event event, const char* call, int rank) const {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaErrorNotReady) return false;
    check_cuda(status, call, rank, "cudaEventQuery");
    return true;
  }
  // The legacy stream while another stream captures in global mode answers cudaErrorStreamCaptureImplicit:
  // capturing too, as far as a host wait is concerned (querying would invalidate the capture).
  bool capturing(Stream stream) const {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t asked = cudaStreamIsCapturing(stream, &status);
    if (asked == cudaErrorStreamCaptureImplicit) return true;
    return asked == cudaSuccess && status != cudaStreamCaptureStatusNone;
  }
  // The stream's capture sequence (cudaStreamGetCaptureInfo's id), 0 when it is not capturing.
  std::uint64_t capture_id(Stream stream) const {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    if (cudaStreamGetCaptureInfo(stream, &status, &id) != cudaSuccess) return 0;
    return status == cudaStreamCaptureStatusActive ? id : 0;
  }
  // While it lives, this thread may make the calls a capture in global or thread-local mode prohibits as
  // "potentially unsafe" (a host query of an event recorded outside the capture): relaxed mode, restored.
  class RelaxedCapture {
   public:
    RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
    ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
    RelaxedCapture(const RelaxedCapture&) = delete;
    RelaxedCapture& operator=(const RelaxedCapture&) = delete;

   private:
    cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  };

  // IPC: this process's allocation as a handle its peers open, a peer's opened (mapped here) and closed.
  IpcHandle ipc_export(void* pointer, const char* call, int rank) const {
    static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandle), "IpcHandle carries a cudaIpcMemHandle_t");
    select(call, rank);
    cudaIpcMemHandle_t native;
    check_cuda(cudaIpcGetMemHandle(&native, pointer), call, rank, "cudaIpcGetMemHandle");
    IpcHandle handle;
    std::memcpy(handle.bytes, &native, sizeof native);
    return handle;
  }
  void* ipc_open(const IpcHandle& handle, int peer, const char* call) const {
    select(call, peer);
    cudaIpcMemHandle_t native;
    std::memcpy(&native, handle.bytes, sizeof native);
    void* pointer = nullptr;
    check_cuda(cudaIpcOpenMemHandle(&pointer, native, cudaIpcMemLazyEnablePeerAccess), call, peer, "cudaIpcOpenMemHandle");
    return pointer;
  }
  void ipc_close(void* pointer) const noexcept {
    if (pointer == nullptr) return;
    cudaSetDevice(ordinal_);
    cudaIpcCloseMemHandle(pointer);
  }

  template <class T>
  static const void* collective_entry() {
    return reinterpret_cast<const void*>(&collective_kernel<T>);
  }
  template <class T>
  static const void* transfer_entry() {
    return reinterpret_cast<const void*>(&transfer_kernel<T>);
  }
  void ensure_fits(std::vector<const void*>& checked, const void* entry, DataType type, int threads, int ranks, int blocks,
                   const char* call, int rank) const {
    ensure_kernel_fits(checked, entry, type, ordinal_, threads, ranks, blocks, call, rank);
  }

  template <class T>
  void launch_collective(Stream stream, const LaunchShape& shape, const CallBuffers& buffers, const CollectiveArgs& args,
                         const char* call, int rank) const {
    select(call, rank);
    const kernel::RankView* views = shape.views;
    int first_rank = shape.first_rank;
    int blocks = shape.blocks;
    CallBuffers by_value = buffers;
    CollectiveArgs shared = args;
    void* kernel_args[] = {&views, &by_value, &first_rank, &blocks, &shared};
    launch_rank_blocks(collective_entry<T>(), kernel_args, shape.ranks, shape.blocks, shape.threads, stream, call, rank);
  }
  template <class T>
  void launch_transfer(Stream stream, const LaunchShape& shape, const TransferTables& tables, const char* call, int rank) const {
    select(call, rank);
    const kernel::RankView* views = shape.views;
    int first_rank = shape.first_rank;
    int blocks = shape.blocks;
    TransferTables by_value = tables;
    void* kernel_args[] = {&views, &by_value, &first_rank, &blocks};
    launch_rank_blocks(transfer_entry<T>(), kernel_args, shape.ranks, shape.blocks, shape.threads,
                       stream, call, rank);
  }

  // Restores the caller's current device when a call returns (the drivers switch devices as they go), and
  // only if it changed: restoring a device the caller never selected would create a context on it.
  class CurrentGuard {
   public:
    CurrentGuard() { had_ = cudaGetDevice(&device_) == cudaSuccess; }
    ~CurrentGuard() {
      int now = -1;
      if (had_ && cudaGetDevice(&now) == cudaSuccess && now != device_) cudaSetDevice(device_);
    }
    CurrentGuard(const CurrentGuard&) = delete;
    CurrentGuard& operator=(const CurrentGuard&) = delete;

   private:
    int device_ = 0;
    bool had_ = false;
  };

 private:
  void select(const char* call, int rank) const { check_cuda(cudaSetDevice(ordinal_), call, rank, "cudaSetDevice"); }

  int ordinal_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
