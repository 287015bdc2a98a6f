// chorus::cuda::IpcComm: one rank per process (or per host thread), one GPU each, running chorus's own
// collective kernels on memory the ranks share through CUDA IPC handles. The ranks find each other through
// any host communicator (mpi::Comm, host::Comm: is_communicator_v), and each launches ONLY ITS OWN kernel,
// on its own stream, as with NCCL.
//
//   chorus::mpi::Comm host(MPI_COMM_WORLD);
//   auto comm = chorus::cuda::IpcComm::create(host, local_rank);     // collective over `host`
//   comm.on(stream).all_reduce(send, recv, count, ReduceOp::sum);   // stream-ordered, returns at once
//   comm.wait();                                                     // bounded; a kernel timeout becomes chorus::Error
//   comm.group([&] { comm.on(stream).send(out, n, next); comm.on(stream).recv(in, n, prev); });  // one launch
//   auto half = comm.split(comm.rank() % 2, comm.rank());           // collective; colour < 0: a null IpcComm
//
// Named IpcComm, not Comm: it is the IPC flavour of chorus's device communicators (cuda::Team is the
// in-process one, nccl::Comm the NCCL one), and a plain cuda::Comm would read as the per-rank view of a Team.
//
// IpcComm is a full communicator (is_communicator_v): its own calls run on the stream given at create (the
// legacy default stream unless told), a View's on its stream. The call forms are shared with the CPU twin
// (cuda/ipc_calls.hpp); send/recv are the p2p kernel's (cuda/ipc_p2p.hpp: the i-th send a -> b meets the
// i-th recv at b from a; a send that fits the FIFO returns without its recv, a larger one waits for it,
// bounded; a send to itself is refused); group(fn) runs the sends and receives made in fn in one launch;
// barrier is a one-int all_reduce, then wait(); split exchanges the new handles through this
// communicator's own kernels (cuda/ipc_split.hpp), so no host communicator is needed after create.
//
// The bootstrap (cuda/ipc_bootstrap.hpp), the call forms, send/recv, split and the per-rank kernel bodies
// are proven on the CPU twin (cuda/twin/ipc_twin.hpp, tests/cuda_twin/test_twin_ipc.cpp); THIS FILE HAS
// NOT RUN ON A GPU (see docs/cuda.md). What the host does not check: that the ranks make the same call
// (collective, count, type, op, root, kernel) in the same order, nor that a send and its recv agree on the
// byte count; like NCCL, ranks that disagree are not detected here, and their kernels time out
// (CHORUS_TIMEOUT_MS) instead.
#pragma once

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "collective_check.hpp"
#include "ipc_bootstrap.hpp"
#include "ipc_calls.hpp"
#include "ipc_p2p.hpp"
#include "ipc_split.hpp"
#include "launch.cuh"
#include "team.cuh"
#include "timeout_error.hpp"
#include "transfer_kernel.cuh"

namespace chorus::cuda {

// The bootstrap's MemoryOpener on a GPU: maps a peer process's allocation into this one, and publishes the
// finished view to the kernel (views[rank] in device memory).
struct CudaIpcOpener {
  int device;
  kernel::RankView* views;  // device: n views, this rank's at [rank]
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
  void publish(const kernel::RankView& view) const {
    const char* call = "cuda::IpcComm::create";
    check_cuda(cudaSetDevice(device), call, view.rank, "cudaSetDevice");
    check_cuda(cudaMemcpy(views + view.rank, &view, sizeof(kernel::RankView), cudaMemcpyHostToDevice), call, view.rank, "cudaMemcpy");
    check_cuda(cudaDeviceSynchronize(), call, view.rank, "cudaDeviceSynchronize");
  }
};

class IpcComm : public IpcCalls<IpcComm> {
 public:
  class View;

  IpcComm() = default;  // a null communicator (what split with a negative colour returns)

  // Collective over `host`: every rank calls it with its own device. Throws chorus::Error on every rank if
  // any rank fails (bad options, two ranks on one GPU, different options, a failed allocation, open or
  // copy of the view). `stream`: where the communicator's own calls (not a View's) run.
  template <class HostComm>
  static IpcComm create(HostComm& host, int device, TeamOptions options = {}, cudaStream_t stream = nullptr) {
    const char* call = "cuda::IpcComm::create";
    const int rank = host.rank();
    const int n = host.size();
    const CurrentDeviceGuard keep_device;
    // Each rank's own part can fail; it still takes part in every exchange (its record marked failed) so
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
    int blocks = 0;
    try {
      blocks = ipc_agree_blocks(host, hello, call);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
    return bootstrap(host, device, options, stream, bus_id, call, rank, rank, n, blocks);
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
  explicit operator bool() const { return peers_.has_value(); }
  int device() const { return device_; }
  int blocks() const { return blocks_; }
  cudaStream_t stream() const { return stream_; }

  // The stream-ordered calls of this rank, launched on `stream` (on this rank's device).
  View on(cudaStream_t stream);

  // The contract's forms (ipc_calls.hpp), on this communicator's stream.
  template <class T>
  void run_collective(const runtime::CollectiveArgs& args) {
    collective_on<T>(args, stream_);
  }
  void run_transfer(const IpcPeerCall& c) { transfer_on(c, stream_); }
  // A one-int all_reduce on the device, then wait(): returns once every rank's kernel has run it.
  void barrier() { barrier_on(stream_); }

  // The sends and receives fn makes (through this communicator or its views, all on one stream) run in
  // one launch at its end, so a rank can send to one peer while it receives from another (a ring
  // exchange) whatever their sizes. Only send and recv inside; at most kMaxRanks of each.
  template <class Fn>
  void group(Fn&& fn) {
    const char* call = "cuda::IpcComm::group";
    ready(call, false);
    group_ = kernel::P2pTable{};
    group_stream_set_ = false;
    grouping_ = true;
    try {
      fn();
    } catch (...) {
      grouping_ = false;
      throw;
    }
    grouping_ = false;
    if (group_.send_count + group_.recv_count > 0) launch_p2p(call, group_, group_stream_);
  }

  // Collective over this communicator (ipc_split.hpp): the members of a colour, ordered by (key, rank),
  // get a new communicator with its own memory (same options, blocks, device and stream), its handles
  // exchanged through this one's kernels; colour < 0 gets a null one. Blocking. Throws on every rank if
  // any rank fails.
  IpcComm split(int color, int key) {
    const char* call = "cuda::IpcComm::split";
    ready(call, false);
    const CurrentDeviceGuard keep_device;
    const IpcSplitPlan plan = plan_ipc_split(exchange_split_entries(*this, color, key), rank());
    IpcSplitChannel<IpcComm> channel(*this, plan);
    if (plan.members.empty()) {
      channel.stand_aside(call, rank());
      return IpcComm();
    }
    return bootstrap(channel, device_, options_, stream_, bus_id_.c_str(), call, rank(), plan.rank,
                     static_cast<int>(plan.members.size()), blocks_);
  }

  // The split's exchanges (ipc_split.hpp): this rank's all_gather and all_reduce(min), staged in device
  // memory, each waited for (bounded).
  std::vector<unsigned char> gather_for_split(const void* mine, std::size_t bytes) {
    const char* call = "cuda::IpcComm::split";
    const std::size_t total = bytes * static_cast<std::size_t>(size());
    DeviceBytes staging(device_, total, call, rank());
    unsigned char* slot = staging.data + bytes * static_cast<std::size_t>(rank());
    check_cuda(cudaMemcpy(slot, mine, bytes, cudaMemcpyHostToDevice), call, rank(), "cudaMemcpy");
    launch<unsigned char>(Collective::all_gather, slot, staging.data, bytes, ReduceOp::sum, 0,
                          kernel_for(Collective::all_gather, Algorithm::automatic, bytes), stream_);
    wait();
    std::vector<unsigned char> all(total);
    check_cuda(cudaMemcpy(all.data(), staging.data, total, cudaMemcpyDeviceToHost), call, rank(), "cudaMemcpy");
    return all;
  }
  int first_failed_for_split(bool failed) {
    const char* call = "cuda::IpcComm::split";
    std::int32_t lowest = failed ? rank() : size();
    DeviceBytes staging(device_, sizeof(lowest), call, rank());
    auto* value = reinterpret_cast<std::int32_t*>(staging.data);
    check_cuda(cudaMemcpy(value, &lowest, sizeof(lowest), cudaMemcpyHostToDevice), call, rank(), "cudaMemcpy");
    launch<std::int32_t>(Collective::all_reduce, value, value, 1, ReduceOp::min, 0, kernel_for(Algorithm::automatic, sizeof(lowest), size()),
                         stream_);
    wait();
    check_cuda(cudaMemcpy(&lowest, value, sizeof(lowest), cudaMemcpyDeviceToHost), call, rank(), "cudaMemcpy");
    return lowest < size() ? lowest : -1;
  }

  // Waits for the last call's kernel (bounded: twice CHORUS_TIMEOUT_MS plus 5 s; the kernel bounds its own
  // waits by CHORUS_TIMEOUT_MS), then turns a kernel timeout record into chorus::Error, as
  // cuda::Team::synchronize does. After a timeout the communicator refuses further calls.
  void wait() {
    const char* call = "cuda::IpcComm::wait";
    check_ipc_live(call, peers_.has_value());
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
      throw timeout_error(*timeout_, launched_call_, launched_kernel_, env::timeout_ms());
    }
  }

 private:
  // A call-scoped device allocation (the split's staging).
  struct DeviceBytes {
    DeviceBytes(int device, std::size_t bytes, const char* call, int rank) {
      check_cuda(cudaSetDevice(device), call, rank, "cudaSetDevice");
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&data), bytes == 0 ? 1 : bytes), call, rank, "cudaMalloc");
    }
    ~DeviceBytes() { cudaFree(data); }
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    unsigned char* data = nullptr;
  };

  // Exchange 2 of create, and both of a split's members: allocate this rank's memory (rank `rank` of
  // `n`), exchange the records over `link` (a host communicator or a split's Channel), open the peers' and
  // publish the view; the status exchange comes after all of it (ipc_bootstrap.hpp). `caller`: this rank
  // as errors name it before the new communicator exists (create: its rank; split: its parent rank).
  template <class Link>
  static IpcComm bootstrap(Link& link, int device, const TeamOptions& options, cudaStream_t stream, const char* bus_id,
                           const char* call, int caller, int rank, int n, int blocks) {
    IpcComm comm;
    comm.device_ = device;
    comm.options_ = options;
    comm.stream_ = stream;
    comm.last_stream_ = stream;
    comm.blocks_ = blocks;
    comm.bus_id_ = bus_id;
    std::exception_ptr failure;
    IpcRecord mine = make_ipc_record(IpcStage::memory, rank, n, bus_id, blocks);
    mine.layout = kernel::with_p2p_region(
        kernel::make_layout(options.staging_bytes, options.ll_bytes, options.fifo_slot_bytes, options.fifo_depth, blocks), n, blocks);
    IpcLocalMemory local{};
    try {
      comm.allocate(mine, call, caller, n);
      kernel::TimeoutRecord* mapped = nullptr;
      check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), comm.timeout_, 0), call, caller, "cudaHostGetDevicePointer");
      local = IpcLocalMemory{comm.scratch_, comm.signals_, comm.state_, mapped, static_cast<std::uint64_t>(env::timeout_ms()) * 1000000u,
                             options.delay_seed};
    } catch (...) {
      failure = std::current_exception();
      mine.failed = 1;
    }
    try {
      comm.peers_.emplace(link, mine, local, CudaIpcOpener{device, comm.views_}, call);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
    return comm;
  }

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
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&flag_), sizeof(int)), call, rank, "cudaMalloc");
    check_cuda(cudaMemset(flag_, 0, sizeof(int)), call, rank, "cudaMemset");
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
    if (scratch_ || signals_ || state_ || views_ || flag_ || timeout_) {
      const CurrentDeviceGuard keep_device;
      cudaSetDevice(device_);
      if (scratch_) cudaFree(scratch_);
      if (signals_) cudaFree(signals_);
      if (state_) cudaFree(state_);
      if (views_) cudaFree(views_);
      if (flag_) cudaFree(flag_);
      if (timeout_) cudaFreeHost(timeout_);
    }
    scratch_ = nullptr;
    signals_ = nullptr;
    state_ = nullptr;
    views_ = nullptr;
    flag_ = nullptr;
    timeout_ = nullptr;
  }

  void swap(IpcComm& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(options_, other.options_);
    std::swap(checked_kernels_, other.checked_kernels_);
    std::swap(blocks_, other.blocks_);
    std::swap(bus_id_, other.bus_id_);
    std::swap(scratch_, other.scratch_);
    std::swap(signals_, other.signals_);
    std::swap(state_, other.state_);
    std::swap(views_, other.views_);
    std::swap(flag_, other.flag_);
    std::swap(timeout_, other.timeout_);
    std::swap(peers_, other.peers_);
    std::swap(stream_, other.stream_);
    std::swap(last_stream_, other.last_stream_);
    std::swap(broken_, other.broken_);
    std::swap(grouping_, other.grouping_);
    std::swap(group_, other.group_);
    std::swap(group_stream_, other.group_stream_);
    std::swap(group_stream_set_, other.group_stream_set_);
    std::swap(launched_kernel_, other.launched_kernel_);
    std::swap(launched_call_, other.launched_call_);
  }

  static const char* call_name(Collective collective) {
    static const char* const names[kCollectiveCount] = {"cuda::IpcComm::all_reduce", "cuda::IpcComm::reduce_scatter",
                                                        "cuda::IpcComm::all_gather", "cuda::IpcComm::broadcast",
                                                        "cuda::IpcComm::reduce", "cuda::IpcComm::all_to_all"};
    return names[static_cast<int>(collective)];
  }

  // Before any call: a live communicator (not moved from, not null), not broken by a timeout, and only
  // send/recv inside group().
  void ready(const char* call, bool may_group) const {
    check_ipc_live(call, peers_.has_value());
    if (broken_) throw make_error(ErrorCode::peer_failed, call, rank(), "an earlier call timed out; make a new communicator");
    if (grouping_ && !may_group) {
      throw make_error(ErrorCode::unsupported, call, rank(), "only send and recv may be called inside group()");
    }
  }

  // A template on the element type (ipc_calls.hpp): only the called types' kernels are compiled.
  template <class T>
  void collective_on(const runtime::CollectiveArgs& args, cudaStream_t stream) {
    const char* call = call_name(args.collective);
    ready(call, false);
    runtime::check_type(call, rank(), args.type);
    runtime::check_op(call, rank(), args.op);
    const kernel::KernelAlgorithm algorithm =
        ipc_kernel_of(call, rank(), args.collective, args.algorithm, args.count * size_of(args.type), size());
    launch<T>(args.collective, static_cast<const T*>(args.send), static_cast<T*>(args.recv), args.count, args.op, args.root, algorithm,
              stream);
  }

  void transfer_on(const IpcPeerCall& c, cudaStream_t stream) {
    const char* call = c.sending ? "cuda::IpcComm::send" : "cuda::IpcComm::recv";
    ready(call, true);
    if (grouping_) {
      if (group_stream_set_ && stream != group_stream_) {
        throw make_error(ErrorCode::invalid_argument, call, rank(), "stream ", static_cast<void*>(stream),
                         " differs from this group's first, ", static_cast<void*>(group_stream_), " (a group is one launch)");
      }
      add_ipc_transfer(group_, c, call, rank(), size());
      group_stream_ = stream;
      group_stream_set_ = true;
      return;
    }
    kernel::P2pTable table{};
    add_ipc_transfer(table, c, call, rank(), size());
    launch_p2p(call, table, stream);
  }

  void barrier_on(cudaStream_t stream) {
    const char* call = "cuda::IpcComm::barrier";
    ready(call, false);
    launch<int>(Collective::all_reduce, flag_, flag_, 1, ReduceOp::sum, 0, kernel_for(Algorithm::automatic, sizeof(int), size()), stream);
    wait();
  }

  // This rank's part of one collective: its own blocks, one cooperative launch on `stream`.
  template <class T>
  void launch(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
              kernel::KernelAlgorithm algorithm, cudaStream_t stream) {
    const char* call = call_name(collective);
    const int me = rank();
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
    launched_kernel_ = kernel::to_string(algorithm);
    launched_call_ = call;
  }

  // This rank's sends and receives (bytes): the p2p kernel on its own blocks, one cooperative launch.
  void launch_p2p(const char* call, const kernel::P2pTable& table, cudaStream_t stream) {
    const int me = rank();
    const CurrentDeviceGuard keep_device;
    const void* kernel = reinterpret_cast<const void*>(&transfer_kernel<std::uint8_t>);
    ensure_kernel_fits(checked_kernels_, kernel, DataType::uint8, device_, options_.threads, 1, blocks_, call, me);
    check_cuda(cudaSetDevice(device_), call, me, "cudaSetDevice");
    const kernel::RankView* views = views_;
    TransferTables tables{};
    tables.table[me] = table;  // the kernel reads its own rank's table only
    int first_rank = me;
    int blocks = blocks_;
    void* kernel_args[] = {&views, &tables, &first_rank, &blocks};
    launch_rank_blocks(kernel, kernel_args, 1, blocks_, options_.threads, stream, call, me);
    last_stream_ = stream;
    launched_kernel_ = "p2p";
    launched_call_ = call;
  }

  int device_ = 0;
  TeamOptions options_{};
  std::vector<const void*> checked_kernels_;  // kernels (entry point and type) the occupancy API confirmed fit
  int blocks_ = 0;
  std::string bus_id_;                          // this rank's GPU, for a split's records
  unsigned char* scratch_ = nullptr;
  kernel::Signals* signals_ = nullptr;
  kernel::RankState* state_ = nullptr;
  kernel::RankView* views_ = nullptr;           // device: n views, this rank's at [rank]
  int* flag_ = nullptr;                         // device: barrier's int
  kernel::TimeoutRecord* timeout_ = nullptr;    // host-mapped
  std::optional<IpcPeerMemory<CudaIpcOpener>> peers_;
  cudaStream_t stream_{};                       // this communicator's own calls
  cudaStream_t last_stream_{};
  bool broken_ = false;
  bool grouping_ = false;
  kernel::P2pTable group_{};
  cudaStream_t group_stream_{};
  bool group_stream_set_ = false;
  const char* launched_kernel_ = "ring";
  const char* launched_call_ = "cuda::IpcComm::all_reduce";

  friend class View;
};

// The calls of one rank on one stream, with the communicator contract's signatures (typed and
// type-erased; ipc_calls.hpp), barrier too. Stream-ordered: each returns once its kernel is launched;
// IpcComm::wait() reports (barrier waits). split is the communicator's (IpcComm::split).
class IpcComm::View : public IpcCalls<IpcComm::View> {
 public:
  View(IpcComm& comm, cudaStream_t stream) : comm_(&comm), stream_(stream) {}

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  cudaStream_t stream() const { return stream_; }

  template <class T>
  void run_collective(const runtime::CollectiveArgs& args) {
    comm_->collective_on<T>(args, stream_);
  }
  void run_transfer(const IpcPeerCall& c) { comm_->transfer_on(c, stream_); }
  void barrier() { comm_->barrier_on(stream_); }
  void wait() { comm_->wait(); }

 private:
  IpcComm* comm_;
  cudaStream_t stream_;
};

inline IpcComm::View IpcComm::on(cudaStream_t stream) {
  check_ipc_live("cuda::IpcComm::on", peers_.has_value());
  return View(*this, stream);
}

static_assert(check_communicator<IpcComm>(), "chorus::cuda::IpcComm must satisfy the communicator contract");

}  // namespace chorus::cuda
