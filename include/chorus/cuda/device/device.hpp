// What a Device is: everything chorus's CUDA drivers (BasicTeam, the per-rank views, the IPC communicator)
// need of a GPU, so they are written once and run on a real GPU (CudaDevice, device/cuda_device.cuh) and
// on the CPU twin (TwinDevice, device/twin_device.hpp) alike. A Device is a small copyable value naming one
// GPU by ordinal (Device{ordinal}); every member throws chorus::Error naming (call, rank) on failure.
//
//   types      Stream, Event (handles; a null Stream is the device's default stream), Mapped {host, device}
//   facts      kName ("cuda", "cuda::twin": how errors name the calls), kMinThreads/kMaxThreads, option
//              defaults kDefaultBlocks, kDefaultThreads, kDefaultStagingBytes, kDefaultLlBytes,
//              kDefaultFifoSlotBytes; ordinal(), bus_id(), check_cooperative(), max_resident_blocks(ranks),
//              enable_peer_access(peer)
//   memory     allocate / free (uninitialised, as cudaMalloc), memset (asynchronous on the default stream),
//              copy (synchronous), allocate_mapped / free_mapped (host memory the kernels see),
//              write_word / read_word (one word of device memory while kernels run: abort), synchronize()
//   ipc        ipc_export(pointer) -> IpcHandle (ipc_record.hpp), ipc_open(handle, peer) -> a pointer here,
//              ipc_close(pointer): a peer process's memory (BasicIpcComm, basic_ipc_comm.hpp)
//   ordering   create_event / destroy_event, record(event, stream), stream_wait(stream, event),
//              query(event) (true once the work before the event's latest record has run), capturing(stream),
//              capture_id(stream) (the capture sequence, 0 when none: launch_order.hpp), RelaxedCapture (while
//              it lives, host waits are allowed during a global or thread-local capture)
//   kernels    collective_entry<T>(), transfer_entry<T>() and ensure_fits (the co-residency check), launch_collective<T> and
//              launch_transfer<T>: one cooperative launch of LaunchShape (kernel/launch_args.hpp), which
//              returns at once; the kernel runs when the stream reaches it; copy_floating(src, type, dst,
//              type, n, divisor, stream): the small elementwise kernel of parallel::DeviceGradientReducer
//   CurrentGuard  restores the caller's current device at scope exit
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class, class = void>
struct is_device : std::false_type {};
template <class D>
struct is_device<D, std::void_t<typename D::Stream, typename D::Event, typename D::Mapped, typename D::CurrentGuard, typename D::RelaxedCapture,
                                decltype(D::kName), decltype(std::declval<const D&>().ordinal()),
                                decltype(std::declval<const D&>().query(std::declval<typename D::Event>(), "", 0)),
                                decltype(std::declval<const D&>().capturing(std::declval<typename D::Stream>())),
                                decltype(std::declval<const D&>().capture_id(std::declval<typename D::Stream>()))>>
    : std::true_type {};
template <class D>
inline constexpr bool is_device_v = is_device<D>::value;

// `bytes` of device memory, zeroed on the device's default stream (synchronise before a kernel on another
// stream reads it); freed again if the memset cannot be enqueued.
template <class Device>
void* allocate_zeroed(const Device& device, std::size_t bytes, const char* call, int rank) {
  void* pointer = device.allocate(bytes, call, rank);
  try {
    device.memset(pointer, 0, bytes, call, rank);
  } catch (...) {
    device.free(pointer);
    throw;
  }
  return pointer;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
