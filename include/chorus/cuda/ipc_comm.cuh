// chorus::cuda::IpcComm: one rank per process (or per host thread), one GPU each, running chorus's own
// collective kernels on memory the ranks share through CUDA IPC handles. The ranks find each other through
// any host communicator (mpi::Comm, host::Comm: is_communicator_v), and each launches ONLY ITS OWN kernel,
// on its own stream, as with NCCL.
//
//   chorus::mpi::Comm host(MPI_COMM_WORLD);
//   auto comm = chorus::cuda::IpcComm::create(host, local_rank);     // collective over `host`
//   comm.on(stream).all_reduce(send, recv, count, ReduceOp::sum);   // stream-ordered, returns at once
//   comm.wait();                                                     // bounded; a kernel timeout becomes chorus::Error
//
// Named IpcComm, not Comm: it is the IPC flavour of chorus's device communicators (cuda::Team is the
// in-process one, nccl::Comm the NCCL one), and a plain cuda::Comm would read as the per-rank view of a Team.
//
// The bootstrap (cuda/ipc_bootstrap.hpp) and the per-rank kernel bodies are proven on the CPU twin
// (cuda/twin/ipc_twin.hpp, tests/cuda_twin/test_twin_ipc.cpp); THIS FILE HAS NOT RUN ON A GPU (see
// docs/cuda.md). What the host does not check: that the ranks make the same call (collective, count, type,
// op, root, kernel) in the same order; like NCCL, ranks that disagree are not detected here, and their
// kernels time out (CHORUS_TIMEOUT_MS) instead. Missing from the communicator contract: send/recv, split
// and barrier, so IpcComm is not (yet) is_communicator_v.
#pragma once

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "../core/algorithm.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "collective_check.hpp"
#include "ipc_bootstrap.hpp"
#include "launch.cuh"
#include "team.cuh"
#include "timeout_error.hpp"

namespace chorus::cuda {

// The bootstrap's MemoryOpener on a GPU: maps a peer process's allocation into this one.
struct CudaIpcOpener {
  int device;
  void* open(const IpcHandle& handle, int peer) const {
    static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandle), "IpcHandle carries a cudaIpcMemHandle_t");
    cudaIpcMemHandle_t native;
    std::memcpy(&native, handle.bytes, sizeof(native));
    check_cuda(cudaSetDevice(device), "cuda::IpcComm::create", peer, "cudaSetDevice");
    void* pointer = nullptr;
    check_cuda(cudaIpcOpenMemHandle(&pointer, native, cudaIpcMemLazyEnablePeerAccess), "cuda::IpcComm::create", peer,
               "cudaIpcOpenMemHandle");
    return pointer;
  }
  void close(void* pointer) const noexcept {
    cudaSetDevice(device);
    cudaIpcCloseMemHandle(pointer);
  }
};

class IpcComm {
 public:
  class View;

  // Collective over `host`: every rank calls it with its own device. Throws chorus::Error on every rank if
  // any rank fails (bad options, two ranks on one GPU, different options, a failed allocation or open).
  template <class HostComm>
  static IpcComm create(HostComm& host, int device, TeamOptions options = {}) {
    const char* call = "cuda::IpcComm::create";
    const int rank = host.rank();
    const int n = host.size();
    const CurrentDeviceGuard keep_device;
    IpcComm comm;
    comm.device_ = device;
    comm.options_ = options;
    // Each rank's own part can fail; it still takes part in both exchanges (its record marked failed) so
    // its peers are released, then throws its own error.
    std::exception_ptr failure;
    char bus_id[32] = {};
    int resident = 0;
    try {
      check_options(options, call, rank);
      check_cuda(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device), call, rank, "cudaDeviceGetPCIBusId");
      int cooperative = 0;
      check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device), call, rank, "cudaDeviceGetAttribute");
      if (!cooperative) throw make_error(ErrorCode::unsupported, call, rank, "device ", device, " cannot launch cooperatively");
      resident = std::min(options.blocks, max_resident_blocks(device, 1, call, rank));
      if (resident < 1) throw make_error(ErrorCode::unsupported, call, rank, "device ", device, " has no SM to run on");
    } catch (...) {
      failure = std::current_exception();
    }
    IpcRecord hello = make_ipc_record(IpcStage::hello, rank, n, bus_id, failure ? 1 : resident);
    hello.failed = failure ? 1 : 0;
    try {
      comm.blocks_ = ipc_agree_blocks(host, hello, call);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
    IpcRecord mine = make_ipc_record(IpcStage::memory, rank, n, bus_id, comm.blocks_);
    mine.layout = kernel::with_p2p_region(kernel::make_layout(options.staging_bytes, options.ll_bytes, options.fifo_slot_bytes,
                                                              options.fifo_depth, comm.blocks_),
                                          n, comm.blocks_);
    try {
      comm.allocate(mine, call, rank, n);
    } catch (...) {
      failure = std::current_exception();
      mine.failed = 1;
    }
    IpcLocalMemory local{};
    if (!failure) {
      kernel::TimeoutRecord* mapped = nullptr;
      if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), comm.timeout_, 0) != cudaSuccess) {
        failure = std::make_exception_ptr(make_error(ErrorCode::internal, call, rank, "cudaHostGetDevicePointer failed"));
        mine.failed = 1;
      }
      local = IpcLocalMemory{comm.scratch_, comm.signals_, comm.state_, mapped,
                             static_cast<std::uint64_t>(env::timeout_ms()) * 1000000u, options.delay_seed};
    }
    try {
      comm.peers_.emplace(host, mine, local, CudaIpcOpener{device}, call);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
    // The kernel reads views[rank]: an array of n views of which only this rank's entry is used.
    check_cuda(cudaSetDevice(device), call, rank, "cudaSetDevice");
    check_cuda(cudaMemcpy(comm.views_ + rank, &comm.peers_->view(), sizeof(kernel::RankView), cudaMemcpyHostToDevice), call, rank,
               "cudaMemcpy");
    check_cuda(cudaDeviceSynchronize(), call, rank, "cudaDeviceSynchronize");
    return comm;
  }

  IpcComm(IpcComm&& other) noexcept { swap(other); }
  IpcComm& operator=(IpcComm&& other) noexcept {
    swap(other);
    return *this;
  }
  IpcComm(const IpcComm&) = delete;
  IpcComm& operator=(const IpcComm&) = delete;
  // Closes the peers' memory, then frees this rank's. Like ncclCommDestroy, every rank should be done with
  // its last call (wait()) and the ranks should meet (a host barrier) before destroying, since a peer's
  // kernel may still be reading this rank's memory.
  ~IpcComm() { release(); }

  int rank() const { return peers_ ? peers_->view().rank : -1; }
  int size() const { return peers_ ? peers_->view().nranks : 0; }
  int device() const { return device_; }
  int blocks() const { return blocks_; }

  // The stream-ordered collectives of this rank, launched on `stream` (on this rank's device).
  View on(cudaStream_t stream);

  // Waits for the last call's kernel (bounded: twice CHORUS_TIMEOUT_MS plus 5 s; the kernel bounds its own
  // waits by CHORUS_TIMEOUT_MS), then turns a kernel timeout record into chorus::Error, as
  // cuda::Team::synchronize does. After a timeout the communicator refuses further calls.
  void wait() {
    const char* call = "cuda::IpcComm::wait";
    const int me = rank();
    const auto limit = std::chrono::steady_clock::now() + 2 * std::chrono::milliseconds(env::timeout_ms()) + std::chrono::seconds(5);
    const CurrentDeviceGuard keep_device;
    check_cuda(cudaSetDevice(device_), call, me, "cudaSetDevice");
    cudaEvent_t done;
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), call, me, "cudaEventCreate");
    const cudaError_t recorded = cudaEventRecord(done, last_stream_);
    if (recorded != cudaSuccess) cudaEventDestroy(done);
    check_cuda(recorded, call, me, "cudaEventRecord");
    cudaError_t status;
    while ((status = cudaEventQuery(done)) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > limit) {
        cudaEventDestroy(done);
        broken_ = true;
        throw make_error(ErrorCode::timeout, call, me, "device ", device_,
                         " did not finish within the bound; the kernel's own waits should have ended first");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    cudaEventDestroy(done);
    if (status != cudaSuccess) broken_ = true;
    check_cuda(status, call, me, "cudaEventQuery");
    if (timed_out(*timeout_)) {
      broken_ = true;
      throw timeout_error(*timeout_, launched_call_, launched_, env::timeout_ms());
    }
  }

 private:
  IpcComm() = default;

  static void check_options(const TeamOptions& options, const char* call, int rank) {
    if (options.threads < 32 || options.threads > 1024 || options.blocks < 1 || options.blocks > kernel::kMaxBlocks) {
      throw make_error(ErrorCode::invalid_argument, call, rank, "threads must be 32..1024 and blocks 1..", kernel::kMaxBlocks,
                       ", got ", options.threads, " and ", options.blocks);
    }
    if (!kernel::valid_fifo_depth(options.fifo_depth) || options.fifo_slot_bytes < kernel::kPackBytes) {
      throw make_error(ErrorCode::invalid_argument, call, rank, "the FIFO needs a power-of-two number of slots, at least 2, of 16 bytes or more, got ",
                       options.fifo_depth, " of ", options.fifo_slot_bytes);
    }
    // Each process would pick kernels at its own thresholds, and ranks running different kernels only time
    // out: until the records carry them, IpcComm runs at the defaults.
    if (options.crossovers != KernelCrossovers{}) {
      throw make_error(ErrorCode::unsupported, call, rank, "TeamOptions::crossovers is not taken by IpcComm yet (its processes "
                       "would have to agree on it): leave the defaults");
    }
  }

  // This rank's memory, exported into `mine`. Partial allocations are freed by release().
  void allocate(IpcRecord& mine, const char* call, int rank, int n) {
    if (kernel::two_shot_round_elements(kernel::segment_elements(options_.staging_bytes, blocks_, 8), n, blocks_, 2) == 0 ||
        kernel::ll_capacity_lines(options_.ll_bytes, n) < 2) {
      throw make_error(ErrorCode::invalid_argument, call, rank, "staging_bytes ", options_.staging_bytes, " or ll_bytes ",
                       options_.ll_bytes, " too small for ", n, " ranks x ", blocks_, " blocks");
    }
    const std::size_t bytes = mine.layout.total_bytes();
    check_cuda(cudaSetDevice(device_), call, rank, "cudaSetDevice");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&scratch_), bytes), call, rank, "cudaMalloc");
    check_cuda(cudaMemset(scratch_, 0, bytes), call, rank, "cudaMemset");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&signals_), sizeof(kernel::Signals)), call, rank, "cudaMalloc");
    check_cuda(cudaMemset(signals_, 0, sizeof(kernel::Signals)), call, rank, "cudaMemset");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&state_), sizeof(kernel::RankState)), call, rank, "cudaMalloc");
    check_cuda(cudaMemset(state_, 0, sizeof(kernel::RankState)), call, rank, "cudaMemset");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&views_), sizeof(kernel::RankView) * static_cast<std::size_t>(n)), call, rank,
               "cudaMalloc");
    check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&timeout_), sizeof(kernel::TimeoutRecord), cudaHostAllocMapped), call, rank,
               "cudaHostAlloc");
    std::memset(static_cast<void*>(timeout_), 0, sizeof(kernel::TimeoutRecord));
    // The memsets must land before a peer's kernel can see the memory.
    check_cuda(cudaDeviceSynchronize(), call, rank, "cudaDeviceSynchronize");
    cudaIpcMemHandle_t native;
    check_cuda(cudaIpcGetMemHandle(&native, scratch_), call, rank, "cudaIpcGetMemHandle");
    std::memcpy(mine.scratch.bytes, &native, sizeof(native));
    check_cuda(cudaIpcGetMemHandle(&native, signals_), call, rank, "cudaIpcGetMemHandle");
    std::memcpy(mine.signals.bytes, &native, sizeof(native));
  }

  void release() noexcept {
    peers_.reset();  // close the peers' memory first
    if (scratch_ || signals_ || state_ || views_ || timeout_) {
      const CurrentDeviceGuard keep_device;
      cudaSetDevice(device_);
      if (scratch_) cudaFree(scratch_);
      if (signals_) cudaFree(signals_);
      if (state_) cudaFree(state_);
      if (views_) cudaFree(views_);
      if (timeout_) cudaFreeHost(timeout_);
    }
    scratch_ = nullptr;
    signals_ = nullptr;
    state_ = nullptr;
    views_ = nullptr;
    timeout_ = nullptr;
  }

  void swap(IpcComm& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(options_, other.options_);
    std::swap(checked_kernels_, other.checked_kernels_);
    std::swap(blocks_, other.blocks_);
    std::swap(scratch_, other.scratch_);
    std::swap(signals_, other.signals_);
    std::swap(state_, other.state_);
    std::swap(views_, other.views_);
    std::swap(timeout_, other.timeout_);
    std::swap(peers_, other.peers_);
    std::swap(last_stream_, other.last_stream_);
    std::swap(broken_, other.broken_);
    std::swap(launched_, other.launched_);
    std::swap(launched_call_, other.launched_call_);
  }

  // This rank's part of one collective: its own blocks, one cooperative launch on `stream`.
  template <class T>
  void launch(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
              kernel::KernelAlgorithm algorithm, cudaStream_t stream) {
    static const char* const names[kCollectiveCount] = {"cuda::IpcComm::all_reduce", "cuda::IpcComm::reduce_scatter",
                                                        "cuda::IpcComm::all_gather", "cuda::IpcComm::broadcast",
                                                        "cuda::IpcComm::reduce", "cuda::IpcComm::all_to_all"};
    const char* call = names[static_cast<int>(collective)];
    const int me = rank();
    if (!peers_) throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": a moved-from communicator"));
    if (broken_) throw make_error(ErrorCode::peer_failed, call, me, "an earlier call timed out; make a new communicator");
    check_rank_call(TeamCallShape{call, collective, algorithm, size(), count, sizeof(T), root}, me, send, recv);
    CallBuffers buffers{};
    buffers.input[me] = send;
    buffers.output[me] = recv;
    buffers.takes_part[me] = 1;
    runtime::CallDescriptor described;
    described.kind = runtime::kind_of(collective);
    described.type = data_type_v<T>;
    described.count = count;
    described.op = op;
    described.root = root;
    const std::size_t bytes = std::max(send_count(collective, count, size()), recv_count(collective, count, size())) * sizeof(T);
    const runtime::NvtxRange range(described, bytes, kernel::to_string(algorithm));
    const CurrentDeviceGuard keep_device;
    ensure_kernel_fits(checked_kernels_, reinterpret_cast<const void*>(&collective_kernel<T>), data_type_v<T>, device_,
                       options_.threads, 1, blocks_, call, me);
    check_cuda(cudaSetDevice(device_), call, me, "cudaSetDevice");
    const kernel::RankView* views = views_;
    int first_rank = me;
    int blocks = blocks_;
    CollectiveArgs args{collective, count, op, root, algorithm};
    void* kernel_args[] = {&views, &buffers, &first_rank, &blocks, &args};
    launch_rank_blocks(reinterpret_cast<const void*>(&collective_kernel<T>), kernel_args, 1, blocks_, options_.threads, stream, call,
                       me);
    last_stream_ = stream;
    launched_ = algorithm;
    launched_call_ = call;
  }

  int device_ = 0;
  TeamOptions options_{};
  std::vector<const void*> checked_kernels_;  // kernels (entry point and type) the occupancy API confirmed fit
  int blocks_ = 0;
  unsigned char* scratch_ = nullptr;
  kernel::Signals* signals_ = nullptr;
  kernel::RankState* state_ = nullptr;
  kernel::RankView* views_ = nullptr;           // device: n views, this rank's at [rank]
  kernel::TimeoutRecord* timeout_ = nullptr;    // host-mapped
  std::optional<IpcPeerMemory<CudaIpcOpener>> peers_;
  cudaStream_t last_stream_{};
  bool broken_ = false;
  kernel::KernelAlgorithm launched_ = kernel::KernelAlgorithm::ring;
  const char* launched_call_ = "cuda::IpcComm::all_reduce";
};

// The collectives of one rank on one stream, with the communicator contract's signatures (typed and
// type-erased). Stream-ordered: each returns once its kernel is launched; IpcComm::wait() reports.
class IpcComm::View {
 public:
  View(IpcComm& comm, cudaStream_t stream) : comm_(&comm), stream_(stream) {}

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }

  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    comm_->launch<T>(Collective::all_reduce, send, recv, count, op, 0, kernel_for(algorithm, count * sizeof(T), size()), stream_);
  }
  template <class T>
  void broadcast(const T* send, T* recv, std::size_t count, int root, Algorithm algorithm = Algorithm::automatic) {
    comm_->launch<T>(Collective::broadcast, send, recv, count, ReduceOp::sum, root,
                     kernel_for(Collective::broadcast, algorithm, count * sizeof(T)), stream_);
  }
  template <class T>
  void reduce(const T* send, T* recv, std::size_t count, ReduceOp op, int root, Algorithm algorithm = Algorithm::automatic) {
    comm_->launch<T>(Collective::reduce, send, recv, count, op, root, kernel_for(Collective::reduce, algorithm, count * sizeof(T)),
                     stream_);
  }
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t send_count, Algorithm algorithm = Algorithm::automatic) {
    comm_->launch<T>(Collective::all_gather, send, recv, send_count, ReduceOp::sum, 0,
                     kernel_for(Collective::all_gather, algorithm, send_count * sizeof(T)), stream_);
  }
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t recv_count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    comm_->launch<T>(Collective::reduce_scatter, send, recv, recv_count, op, 0,
                     kernel_for(Collective::reduce_scatter, algorithm, recv_count * sizeof(T)), stream_);
  }
  template <class T>
  void all_to_all(const T* send, T* recv, std::size_t count_per_peer, Algorithm algorithm = Algorithm::automatic) {
    comm_->launch<T>(Collective::all_to_all, send, recv, count_per_peer, ReduceOp::sum, 0,
                     kernel_for(Collective::all_to_all, algorithm, count_per_peer * sizeof(T)), stream_);
  }

  // Type-erased, as NCCL takes them.
  void all_reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                  Algorithm algorithm = Algorithm::automatic) {
    visit_type(type, [&](auto t) {
      using T = decltype(t);
      all_reduce<T>(static_cast<const T*>(send), static_cast<T*>(recv), count, op, algorithm);
    });
  }
  void broadcast(const void* send, void* recv, std::size_t count, DataType type, int root, Algorithm algorithm = Algorithm::automatic) {
    visit_type(type, [&](auto t) {
      using T = decltype(t);
      broadcast<T>(static_cast<const T*>(send), static_cast<T*>(recv), count, root, algorithm);
    });
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic) {
    visit_type(type, [&](auto t) {
      using T = decltype(t);
      reduce<T>(static_cast<const T*>(send), static_cast<T*>(recv), count, op, root, algorithm);
    });
  }
  void all_gather(const void* send, void* recv, std::size_t send_count, DataType type, Algorithm algorithm = Algorithm::automatic) {
    visit_type(type, [&](auto t) {
      using T = decltype(t);
      all_gather<T>(static_cast<const T*>(send), static_cast<T*>(recv), send_count, algorithm);
    });
  }
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic) {
    visit_type(type, [&](auto t) {
      using T = decltype(t);
      reduce_scatter<T>(static_cast<const T*>(send), static_cast<T*>(recv), recv_count, op, algorithm);
    });
  }
  void all_to_all(const void* send, void* recv, std::size_t count_per_peer, DataType type, Algorithm algorithm = Algorithm::automatic) {
    visit_type(type, [&](auto t) {
      using T = decltype(t);
      all_to_all<T>(static_cast<const T*>(send), static_cast<T*>(recv), count_per_peer, algorithm);
    });
  }

 private:
  IpcComm* comm_;
  cudaStream_t stream_;
};

inline IpcComm::View IpcComm::on(cudaStream_t stream) { return View(*this, stream); }

}  // namespace chorus::cuda
