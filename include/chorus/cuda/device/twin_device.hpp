// TwinDevice: an asynchronous GPU made of CPU threads, the Device the CPU twin's teams and IPC ranks run on
// (device/device.hpp says what a Device is). Its memory is its own allocations (host memory, so a test or a
// teaching example may look at it), each stream is a worker thread that runs launches and copies in
// order (device/twin_stream.hpp), and a launch runs the very kernel bodies the GPU runs (cuda/kernel/) on a
// thread per lane. A call on it returns before its kernel ran, exactly as on a GPU; so the driver code
// written once over a Device (BasicTeam, the per-rank views) runs here under the sanitizers, stream
// ordering included, and a GPU run tests only the memory model and the speed.
//
// Device ordinals are independent twin GPUs (each with its own default stream); the null stream is the
// device's default stream (without the legacy stream's implicit synchronisation with other streams).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../../core/config.hpp"
#include "../../core/data_type.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../core/floating_copy.hpp"
#include "../kernel/bounded_wait.hpp"
#include "../kernel/collective.hpp"
#include "../kernel/launch_args.hpp"
#include "../kernel/p2p.hpp"
#include "../twin/block_threads.hpp"
#include "twin_ipc_registry.hpp"
#include "twin_stream.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

class TwinDevice {
 public:
  using Stream = twin::Stream*;  // null: this device's default stream
  using Event = twin::Event*;

  // How errors name the device's communicators ("cuda::twin::Team::all_reduce"), and its option defaults:
  // small, so tests of 8 ranks x blocks x lanes threads stay quick under the sanitizers.
  static constexpr const char* kName = "cuda::twin";
  static constexpr int kMinThreads = 1;
  static constexpr int kMaxThreads = 64;
  static constexpr int kDefaultBlocks = 2;
  static constexpr int kDefaultThreads = 4;
  static constexpr std::size_t kDefaultStagingBytes = 64 * 1024;
  static constexpr std::size_t kDefaultLlBytes = 16 * 1024;
  static constexpr std::size_t kDefaultFifoSlotBytes = 4 * 1024;

  explicit TwinDevice(int ordinal = 0) : state_(&state_of(ordinal)), ordinal_(ordinal) {}

  int ordinal() const { return ordinal_; }
  std::string bus_id(const char*, int) const { return "twin:" + std::to_string(ordinal_); }
  void check_cooperative(const char*, int) const {}
  // Every block is a thread: any number is resident at once.
  int max_resident_blocks(int, const char*, int) const { return kernel::kMaxBlocks; }
  void enable_peer_access(int, const char*, int) const {}

  // Memory. allocate is cudaMalloc (uninitialised: memset it); memset is asynchronous on the default stream
  // as cudaMemset is; the copies are synchronous as cudaMemcpy is.
  void* allocate(std::size_t bytes, const char* call, int rank) const {
    void* pointer = std::aligned_alloc(256, round_up(bytes));
    if (pointer == nullptr) throw make_error(ErrorCode::invalid_argument, call, rank, "out of twin device memory for ", bytes, " bytes");
    return pointer;
  }
  // Freeing memory while a launch runs on this device is what a GPU would punish with a fault or silent
  // corruption; the twin counts it (freed_while_running()) so the tests can prove teardown waits.
  void free(void* pointer) const noexcept {
    if (pointer == nullptr) return;
    if (state_->running.load() > 0) ++state_->freed_while_running;
    ipc_registry().unexport(pointer);  // as on a GPU: freed memory's handles name nothing
    std::free(pointer);
  }
  void memset(void* pointer, int value, std::size_t bytes, const char*, int) const {
    default_stream().enqueue([pointer, value, bytes] { std::memset(pointer, value, bytes); });
  }
  void copy(void* to, const void* from, std::size_t bytes, const char* call, int rank) const {
    default_stream().enqueue([to, from, bytes] { std::memcpy(to, from, bytes); });
    synchronize(call, rank);
  }
  // cudaHostAlloc(mapped): host memory the kernels see; on the twin both addresses are the same.
  struct Mapped {
    void* host;
    void* device;
  };
  Mapped allocate_mapped(std::size_t bytes, const char* call, int rank) const {
    void* pointer = allocate(bytes, call, rank);
    std::memset(pointer, 0, bytes);
    return {pointer, pointer};
  }
  void free_mapped(void* host) const noexcept { free(host); }
  // A word the host writes into device memory while kernels may run (abort), and reads back.
  void write_word(std::uint32_t* word, std::uint32_t value, const char*, int) const { __atomic_store_n(word, value, __ATOMIC_RELEASE); }
  std::uint32_t read_word(const std::uint32_t* word, const char*, int) const { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

  // Waits for everything enqueued on the default stream (cudaDeviceSynchronize, as far as the twin's
  // setup needs it).
  void synchronize(const char* call, int rank) const {
    twin::Event done;
    default_stream().record(done);
    if (!done.wait_reached(done.last_mark(), std::chrono::steady_clock::now() + bound())) {
      throw make_error(ErrorCode::timeout, call, rank, "twin device ", ordinal_, " did not drain its default stream");
    }
    raise(done.failure(), call, rank);
  }

  // The small elementwise kernel the device gradient reducer enqueues (parallel/device_gradient_reducer.hpp):
  // n floating elements src -> dst, divided by `divisor`, when `stream` gets there. The same loop as the host's.
  void copy_floating(const void* src, DataType src_type, void* dst, DataType dst_type, std::size_t n, double divisor,
                     Stream stream, const char*, int) const {
    of(stream).enqueue([=] { chorus::copy_floating(src, src_type, dst, dst_type, n, divisor); });
  }

  // Events and streams with CUDA's semantics.
  Event create_event(const char*, int) const { return new twin::Event; }
  void destroy_event(Event event) const noexcept { delete event; }
  void record(Event event, Stream stream, const char*, int) const { of(stream).record(*event); }
  void stream_wait(Stream stream, Event event, const char* call, int rank) const {
    if (!of(stream).may_wait(*event)) {  // CUDA's refusals, worded as CudaDevice reports them
      throw make_error(ErrorCode::internal, call, rank, of(stream).capturing() ? kIsolation : kCapturedEvent);
    }
    of(stream).wait(*event, bound());
  }
  // Whether the work before the event's latest record has run; a failure of that work is chorus::Error.
  bool query(Event event, const char* call, int rank) const {
    if (event->captured_in() != 0) throw make_error(ErrorCode::internal, call, rank, kCapturedEvent);
    if (!event->reached(event->last_mark())) return false;
    raise(event->failure(), call, rank);
    return true;
  }
  bool capturing(Stream stream) const { return of(stream).capturing(); }
  std::uint64_t capture_id(Stream stream) const { return of(stream).capture_id(); }
  // The twin's host waits are legal during capture; nothing to relax.
  struct RelaxedCapture {};

  static constexpr const char* kIsolation =
      "cudaStreamWaitEvent failed: dependency created on uncaptured work in another stream (cudaErrorStreamCaptureIsolation)";
  static constexpr const char* kCapturedEvent =
      "the event was last recorded in a capturing stream: operation not permitted when stream is capturing (cudaErrorCapturedEvent)";

  // Kernels. The entry identifies a kernel for the co-residency check, which every twin launch passes.
  template <class T>
  static const void* collective_entry() {
    static const char entry = 0;
    return &entry;
  }
  template <class T>
  static const void* transfer_entry() {
    static const char entry = 0;
    return &entry;
  }
  void ensure_fits(std::vector<const void*>&, const void*, DataType, int, int, int, const char*, int) const {}

  // One launch: every rank of `shape` that takes part runs its blocks, all at once (as one cooperative
  // launch), when the stream reaches it. Each rank's deadline runs from the launch's start.
  template <class T>
  void launch_collective(Stream stream, const LaunchShape& shape, const CallBuffers& buffers, const CollectiveArgs& args,
                         const char*, int) const {
    launch(stream, shape, [buffers](int rank) { return buffers.takes_part[rank] != 0; },
           [buffers, args](const twin::HostBlock& block, const kernel::RankView& view) {
             kernel::mark_started(block, view);
             const kernel::CollectiveCall<T> call{args.collective, static_cast<const T*>(buffers.input[view.rank]),
                                                  static_cast<T*>(buffers.output[view.rank]), args.count, args.op, args.root};
             kernel::collective(block, view, call, args.algorithm);
           });
  }
  template <class T>
  void launch_transfer(Stream stream, const LaunchShape& shape, const TransferTables& tables, const char*, int) const {
    launch(stream, shape, [tables](int rank) { return tables.table[rank].send_count + tables.table[rank].recv_count > 0; },
           [tables](const twin::HostBlock& block, const kernel::RankView& view) {
             kernel::mark_started(block, view);
             kernel::p2p<T>(block, view, tables.table[view.rank]);
           });
  }

  // cudaLaunchHostFunc: host work in stream order (tests and examples hold a stream busy with it).
  void launch_host_func(Stream stream, std::function<void()> work) const { of(stream).enqueue(std::move(work)); }

  // Freed-while-running count of device `ordinal` (see free()).
  static long freed_while_running(int ordinal = 0) { return state_of(ordinal).freed_while_running.load(); }

  // IPC (cudaIpcGetMemHandle, cudaIpcOpenMemHandle, cudaIpcCloseMemHandle) through the process-wide
  // registry, the twin's driver: ranks are threads, a handle names an allocation of this process, and
  // opens are counted (ipc_registry().open_count()) so tests can check that every open was closed.
  IpcHandle ipc_export(void* pointer, const char*, int) const { return ipc_registry().export_memory(pointer); }
  void* ipc_open(const IpcHandle& handle, int peer, const char* call) const {
    int left = state_->failing_open.load();
    while (left > 0 && !state_->failing_open.compare_exchange_weak(left, left - 1)) {
    }
    if (left == 1) {
      throw make_error(ErrorCode::internal, call, peer, "opening its memory handle failed (injected: TwinDevice::fail_ipc_open)");
    }
    return ipc_registry().open(handle, peer);
  }
  void ipc_close(void* pointer) const noexcept { ipc_registry().close(pointer); }
  static twin::IpcRegistry& ipc_registry() {
    static twin::IpcRegistry* registry = new twin::IpcRegistry;  // never destroyed: frees may come after statics
    return *registry;
  }
  // Tests: the `nth` IPC open on device `ordinal` from now on fails, as a failed cudaIpcOpenMemHandle
  // (0: none).
  static void fail_ipc_open(int ordinal, int nth) { state_of(ordinal).failing_open.store(nth); }

  // The CUDA device guard's twin: nothing to restore (declared so, not defaulted: a guard is not "unused").
  struct CurrentGuard {
    CurrentGuard() {}   // NOLINT(modernize-use-equals-default)
    ~CurrentGuard() {}  // NOLINT(modernize-use-equals-default)
  };

 private:
  struct State {
    std::mutex mutex;
    std::unique_ptr<twin::Stream> default_stream;
    std::atomic<int> running{0};
    std::atomic<long> freed_while_running{0};
    std::atomic<int> failing_open{0};  // fail_ipc_open's countdown
  };
  // One state per ordinal for the life of the program (so a device's default stream outlives every team).
  static State& state_of(int ordinal) {
    static std::mutex mutex;
    static std::map<int, std::unique_ptr<State>>* states = new std::map<int, std::unique_ptr<State>>;  // never destroyed: workers may outlive statics
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<State>& state = (*states)[ordinal];
    if (!state) state = std::make_unique<State>();
    return *state;
  }
  twin::Stream& default_stream() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->default_stream) state_->default_stream = std::make_unique<twin::Stream>();
    return *state_->default_stream;
  }
  twin::Stream& of(Stream stream) const { return stream != nullptr ? *stream : default_stream(); }

  // Streams never wait longer than a kernel can run, plus a grace period.
  static std::chrono::milliseconds bound() { return std::chrono::milliseconds(2 * env::kernel_timeout_ms() + 5000); }
  static std::size_t round_up(std::size_t bytes) { return bytes == 0 ? 256 : (bytes + 255) / 256 * 256; }
  static void raise(const std::exception_ptr& failure, const char* call, int rank) {
    if (!failure) return;
    try {
      std::rethrow_exception(failure);
    } catch (const Error& e) {
      throw make_error(e.code(), call, rank, "a launch on the twin device failed: ", e.what());
    } catch (const std::exception& e) {
      throw make_error(ErrorCode::internal, call, rank, "a launch on the twin device failed: ", e.what());
    }
  }

  template <class Runs, class Body>
  void launch(Stream stream, const LaunchShape& shape, Runs runs, Body body) const {
    State* state = state_;
    of(stream).enqueue([state, shape, runs, body] {
      ++state->running;
      struct Done {
        State* state;
        ~Done() { --state->running; }
      } done{state};
      twin::BlockThreads threads;
      for (int r = shape.first_rank; r < shape.first_rank + shape.ranks; ++r) {
        if (!runs(r)) continue;
        const kernel::RankView& view = shape.views[r];
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(view.timeout_ns);
        threads.start_body(view, shape.threads, deadline, body);
      }
      threads.join();
    });
  }

  State* state_;
  int ordinal_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
