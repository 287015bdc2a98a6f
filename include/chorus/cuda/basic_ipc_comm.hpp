// BasicIpcComm<Device>: one rank per process (or per host thread), one GPU each, running chorus's own
// collective kernels on memory the ranks share through IPC handles; written once over a Device
// (device/device.hpp): cuda::IpcComm is BasicIpcComm<CudaDevice> (ipc_comm.cuh), cuda::twin::IpcRank is
// BasicIpcComm<TwinDevice> (twin/ipc_twin.hpp), so the twin runs this very code. The ranks find each other
// through any host communicator (mpi::Comm, host::Comm: is_communicator_v), and each launches ONLY ITS OWN
// kernel, on its own stream, as with NCCL.
//
//   auto comm = chorus::cuda::IpcComm::create(host, local_rank);     // collective over `host`
//   comm.on(stream).all_reduce(send, recv, count, ReduceOp::sum);   // stream-ordered, returns at once
//   comm.wait();                                                     // bounded; a kernel's timeout or an abort is chorus::Error
//   comm.group([&] { comm.on(stream).send(out, n, next); comm.on(stream).recv(in, n, prev); });  // one launch
//   auto half = comm.split(comm.rank() % 2, comm.rank());           // collective; colour < 0: a null communicator
//   comm.abort();                                                    // from any thread: every rank's kernels give up
//
// A full communicator (is_communicator_v): its own calls run on the stream given at create (the device's
// default stream unless told), a View's on its stream. The call forms are ipc_calls.hpp's; send/recv are
// the p2p kernel's (ipc_p2p.hpp: the i-th send a -> b meets the i-th recv at b from a; a send that fits the
// FIFO completes without its recv, a larger one waits for it, bounded; a send to itself is refused);
// group(fn) runs the sends and receives made in fn in one launch; barrier is a one-int all_reduce, then
// wait(); split exchanges the new handles through this communicator's own kernels (ipc_split.hpp), so no
// host communicator is needed after create.
//
// Every call returns once its launch is enqueued; results may be read after wait() (or by later work on the
// same stream). The communicator orders its own work across the streams it is given, as NCCL does: each
// launch waits for its previous one (an order event: stream_wait before, record after; launch_order.hpp
// says how a launch captured into a graph is ordered), so two calls on two streams never share the
// kernels' barrier epochs, FIFO counters or staging at once. wait() waits for that
// event (launch_wait.hpp: bounded by CHORUS_KERNEL_TIMEOUT_MS plus a grace period from the last kernel
// start), then reports an abort (peer_failed, naming the rank that aborted) or the kernel's timeout record;
// after either, the communicator refuses further calls. Host waits (wait, barrier, split) refuse a stream
// that is being captured into a graph, leaving the communicator usable.
//
// What the host does not check: that the ranks make the same call (collective, count, type, op, root,
// kernel) in the same order, nor that a send and its recv agree on the byte count; like NCCL, ranks that
// disagree are not detected here, and their kernels time out (CHORUS_KERNEL_TIMEOUT_MS) instead.
// Destroying waits (bounded) for this rank's own work; like ncclCommDestroy, the ranks should meet (a host
// barrier) before destroying, since a peer's kernel may still read this rank's memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/memory_space.hpp"
#include "../core/log.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/nvtx_range.hpp"
#include "call_names.hpp"
#include "device/device.hpp"
#include "collective_check.hpp"
#include "ipc_bootstrap.hpp"
#include "ipc_calls.hpp"
#include "ipc_p2p.hpp"
#include "ipc_quiesce.hpp"
#include "ipc_split.hpp"
#include "kernel/launch_args.hpp"
#include "kernel_choice.hpp"
#include "launch_range.hpp"
#include "launch_order.hpp"
#include "launch_wait.hpp"
#include "team_options.hpp"
#include "timeout_error.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// The bootstrap's MemoryOpener over a Device: maps a peer's allocation into this process, and publishes the
// finished view to this rank's kernels (views[rank] in device memory).
template <class Device>
struct IpcDeviceOpener {
  Device device;
  kernel::RankView* views;  // device memory: n views, this rank's at [rank]
  const char* call;
  void* open(const IpcHandle& handle, int peer) const { return device.ipc_open(handle, peer, call); }
  void close(void* pointer) const noexcept { device.ipc_close(pointer); }
  void publish(const kernel::RankView& view) const {
    device.copy(views + view.rank, &view, sizeof view, call, view.rank);
    device.synchronize(call, view.rank);
  }
};

template <class Device>
class BasicIpcComm : public IpcCalls<BasicIpcComm<Device>> {
 public:
  using Stream = typename Device::Stream;
  using Options = BasicTeamOptions<Device>;
  // Buffers are the device's memory; a call completes when its stream reaches it (read after wait()).
  static constexpr MemorySpace memory_space = MemorySpace::device;
  class View;

  BasicIpcComm() = default;  // a null communicator (what split with a negative colour returns)

  // Collective over `host`: every rank calls it with its own device (a GPU ordinal; on the twin, a twin
  // device of its own). Throws chorus::Error on every rank if any rank fails (bad options, two ranks on one
  // GPU, different options, a failed allocation, open or copy of the view). `stream`: where the
  // communicator's own calls (not a View's) run.
  template <class HostComm>
  static BasicIpcComm create(HostComm& host, int device, Options options = {}, Stream stream = Stream{}) {
    const char* call = call_name<Device>("IpcComm::create");
    const int rank = host.rank();
    const int n = host.size();
    [[maybe_unused]] const typename Device::CurrentGuard keep_device;
    // Each rank's own part can fail; it still takes part in every exchange (its record marked failed) so
    // its peers are released, then throws its own error.
    std::exception_ptr failure;
    std::string bus_id;
    int resident = 0;
    try {
      check_options(options, n, call, rank);
      const Device gpu(device);
      bus_id = gpu.bus_id(call, rank);
      gpu.check_cooperative(call, rank);
      resident = std::min(options.blocks, gpu.max_resident_blocks(1, call, rank));
      if (resident < 1) throw make_error(ErrorCode::unsupported, call, rank, "device ", device, " has no SM to run on");
    } catch (...) {
      failure = std::current_exception();
    }
    IpcRecord hello = make_ipc_record(IpcStage::hello, rank, n, bus_id.c_str(), failure ? 1 : resident);
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

  BasicIpcComm(BasicIpcComm&& other) noexcept { swap(other); }
  BasicIpcComm& operator=(BasicIpcComm&& other) noexcept {
    swap(other);
    return *this;
  }
  BasicIpcComm(const BasicIpcComm&) = delete;
  BasicIpcComm& operator=(const BasicIpcComm&) = delete;
  ~BasicIpcComm() { release(); }

  int rank() const { return peers_ ? peers_->view().rank : -1; }
  int size() const { return peers_ ? peers_->view().nranks : 0; }
  explicit operator bool() const { return peers_.has_value(); }
  int device() const { return device_; }
  int blocks() const { return blocks_; }
  Stream stream() const { return stream_; }
  const Options& options() const { return options_; }

  // The stream-ordered calls of this rank, launched on `stream` (on this rank's device).
  View on(Stream stream) {
    check_ipc_live(call_name<Device>("IpcComm::on"), live());
    return View(*this, stream);
  }

  // The contract's forms (ipc_calls.hpp), on this communicator's stream.
  template <class T>
  void run_collective(const runtime::CollectiveArgs& args) {
    collective_on<T>(args, stream_);
  }
  void run_transfer(const IpcPeerCall& c) { transfer_on(c, stream_); }
  // A one-int all_reduce on the device, then wait(): returns once every rank's kernel has run it.
  void barrier() { barrier_on(stream_); }

  // A collective with a chosen kernel (tests, benchmarks; kernel::supports says which serve which).
  template <class T>
  void collective_with(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
                       kernel::KernelAlgorithm algorithm) {
    collective_with_on<T>(collective, send, recv, count, op, root, algorithm, stream_);
  }
  template <class T>
  void all_reduce_with(const T* send, T* recv, std::size_t count, ReduceOp op, kernel::KernelAlgorithm algorithm) {
    collective_with_on<T>(Collective::all_reduce, send, recv, count, op, 0, algorithm, stream_);
  }

  // The sends and receives fn makes (through this communicator or its views, all on one stream) run in one
  // launch at its end, so a rank can send to one peer while it receives from another (a ring exchange)
  // whatever their sizes. Only send and recv inside; at most kMaxRanks of each.
  template <class Fn>
  void group(Fn&& fn) {
    const char* call = call_name<Device>("IpcComm::group");
    ready(call, false);
    group_ = kernel::P2pTable{};
    group_stream_ = stream_;
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

  // Collective over this communicator (ipc_split.hpp): the members of a colour, ordered by (key, rank), get
  // a new communicator with its own memory (same options, blocks, device and stream), its handles exchanged
  // through this one's kernels; colour < 0 gets a null one. Blocking. Throws on every rank if any rank fails.
  BasicIpcComm split(int color, int key) {
    const char* call = call_name<Device>("IpcComm::split");
    ready(call, false);
    refuse_capture(call, stream_);
    [[maybe_unused]] const typename Device::CurrentGuard keep_device;
    const IpcSplitPlan plan = plan_ipc_split(exchange_split_entries(*this, color, key), rank());
    IpcSplitChannel<BasicIpcComm> channel(*this, plan);
    if (plan.members.empty()) {
      channel.stand_aside(call, rank());
      return BasicIpcComm();
    }
    return bootstrap(channel, device_, options_, stream_, bus_id_, call, rank(), plan.rank, static_cast<int>(plan.members.size()),
                     blocks_);
  }

  // The split's exchanges (ipc_split.hpp): this rank's all_gather and all_reduce(min), staged in device
  // memory, each waited for (bounded).
  std::vector<unsigned char> gather_for_split(const void* mine, std::size_t bytes) {
    const std::size_t total = bytes * static_cast<std::size_t>(size());
    std::vector<unsigned char> all(total);
    staged(total, [&](unsigned char* staging, const char* call) {
      unsigned char* slot = staging + bytes * static_cast<std::size_t>(rank());
      Device(device_).copy(slot, mine, bytes, call, rank());
      launch<unsigned char>(call, Collective::all_gather, slot, staging, bytes, ReduceOp::sum, 0,
                            kernel_for_call(Collective::all_gather, Algorithm::automatic, bytes, size()), stream_);
      wait();
      Device(device_).copy(all.data(), staging, total, call, rank());
    });
    return all;
  }
  int first_failed_for_split(bool failed) {
    std::int32_t lowest = failed ? rank() : size();
    staged(sizeof lowest, [&](unsigned char* staging, const char* call) {
      auto* value = reinterpret_cast<std::int32_t*>(staging);
      Device(device_).copy(value, &lowest, sizeof lowest, call, rank());
      launch<std::int32_t>(call, Collective::all_reduce, value, value, 1, ReduceOp::min, 0,
                           kernel_for_call(Collective::all_reduce, Algorithm::automatic, sizeof lowest, size()), stream_);
      wait();
      Device(device_).copy(&lowest, value, sizeof lowest, call, rank());
    });
    return lowest < size() ? lowest : -1;
  }

  // Waits (bounded: launch_wait.hpp) for this communicator's work so far, then reports an abort (any
  // rank's: peer_failed naming it) or this rank's kernel timeout record; after either the communicator
  // refuses further calls. Refused, leaving the communicator usable, while the stream of its last call is
  // being captured into a graph (a graph cannot be waited for).
  void wait() {
    const char* call = call_name<Device>("IpcComm::wait");
    check_ipc_live(call, live());
    if (launched_) refuse_capture(call, last_stream_);
    if (launched_) {
      [[maybe_unused]] const typename Device::CurrentGuard keep_device;
      try {
        wait_for_work(std::vector<PendingWork<Device>>{{Device(device_), order_.eager, rank()}},
                      std::vector<const kernel::TimeoutRecord*>{timeout_host_}, call);
      } catch (...) {
        broken_ = true;
        throw;
      }
      launched_ = false;  // nothing outstanding: later waits need not look at a stream the caller may have destroyed
    }
    raise_kernel_failure();
  }

  // Releases every kernel of every rank that waits: writes 1 + this rank into each rank's abort word
  // (Signals::aborted, which every kernel wait polls), so spinning kernels give up and every rank's
  // wait() reports peer_failed naming this rank. This communicator refuses further calls. Returns once
  // the words are written; safe from any thread.
  void abort() {
    const char* call = call_name<Device>("IpcComm::abort");
    check_ipc_live(call, live());
    [[maybe_unused]] const typename Device::CurrentGuard keep_device;
    const kernel::RankView& view = peers_->view();
    const auto value = static_cast<std::uint32_t>(view.rank + 1);
    aborted_.store(true);
    for (int r = 0; r < view.nranks; ++r) Device(device_).write_word(&view.signals[r]->aborted, value, call, view.rank);
  }

  // The calls of one rank on one stream, with the communicator contract's signatures (typed and
  // type-erased; ipc_calls.hpp), barrier and wait too. split is the communicator's.
  class View : public IpcCalls<View> {
   public:
    static constexpr MemorySpace memory_space = MemorySpace::device;
    View(BasicIpcComm& comm, Stream stream) : comm_(&comm), stream_(stream) {}

    int rank() const { return comm_->rank(); }
    int size() const { return comm_->size(); }
    Stream stream() const { return stream_; }

    template <class T>
    void run_collective(const runtime::CollectiveArgs& args) {
      comm_->template collective_on<T>(args, stream_);
    }
    void run_transfer(const IpcPeerCall& c) { comm_->transfer_on(c, stream_); }
    void barrier() { comm_->barrier_on(stream_); }
    void wait() { comm_->wait(); }
    template <class T>
    void collective_with(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
                         kernel::KernelAlgorithm algorithm) {
      comm_->template collective_with_on<T>(collective, send, recv, count, op, root, algorithm, stream_);
    }

   private:
    BasicIpcComm* comm_;
    Stream stream_;
  };

 private:
  bool live() const { return peers_.has_value(); }

  // Before any call: a live communicator (not moved from, not null), not aborted nor broken, and only
  // send/recv inside group().
  void ready(const char* call, bool may_group) const {
    check_ipc_live(call, live());
    if (aborted_.load()) {
      throw make_error(ErrorCode::peer_failed, call, rank(), "this communicator was aborted (abort()); make a new one");
    }
    if (broken_) {
      throw make_error(ErrorCode::peer_failed, call, rank(), "an earlier call failed (a kernel timed out or a rank aborted); "
                       "make a new communicator");
    }
    if (grouping_ && !may_group) {
      throw make_error(ErrorCode::unsupported, call, rank(), "only send and recv may be called inside group()");
    }
  }

  // A host wait cannot wait for a graph being captured: refused, the communicator untouched.
  void refuse_capture(const char* call, Stream stream) const {
    if (Device(device_).capturing(stream)) {
      throw make_error(ErrorCode::invalid_argument, call, rank(), "the stream is being captured into a graph: a host wait is not "
                       "allowed during capture (end the capture first; the communicator stays usable)");
    }
  }

  // Exchange 2 of create, and both of a split's members: allocate this rank's memory (rank `rank` of `n`),
  // exchange the records over `link` (a host communicator or a split's Channel), open the peers' and
  // publish the view; the status exchange comes after all of it (ipc_bootstrap.hpp). `caller`: this rank
  // as errors name it before the new communicator exists (create: its rank; split: its parent rank).
  template <class Link>
  static BasicIpcComm bootstrap(Link& link, int device, const Options& options, Stream stream, const std::string& bus_id,
                                const char* call, int caller, int rank, int n, int blocks) {
    BasicIpcComm comm;
    comm.device_ = device;
    comm.options_ = options;
    comm.stream_ = stream;
    comm.last_stream_ = stream;
    comm.blocks_ = blocks;
    comm.bus_id_ = bus_id;
    std::exception_ptr failure;
    IpcRecord mine = make_ipc_record(IpcStage::memory, rank, n, bus_id.c_str(), blocks);
    mine.layout = team_layout(options, n, blocks);
    IpcLocalMemory local{};
    try {
      check_team_sizes(options, n, blocks, call, caller);
      comm.allocate(mine, call, caller, n);
      local = IpcLocalMemory{comm.scratch_, comm.signals_, comm.state_, comm.timeout_device_,
                             static_cast<std::uint64_t>(env::kernel_timeout_ms()) * 1000000u, options.delay_seed};
    } catch (...) {
      failure = std::current_exception();
      mine.failed = 1;
    }
    try {
      comm.peers_.emplace(link, mine, local, IpcDeviceOpener<Device>{Device(device), comm.views_, call}, call);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
    return comm;
  }

  // The team options' one validation, and what IpcComm does not take yet: each process would pick kernels
  // at its own thresholds (ranks running different kernels only time out), and every rank runs the
  // identity ring (no rank sees its peers' topology).
  static void check_options(const Options& options, int n, const char* call, int rank) {
    check_team_options(options, n, call, rank);
    if (options.crossovers != KernelCrossovers{}) {
      throw make_error(ErrorCode::unsupported, call, rank, "TeamOptions::crossovers is not taken by IpcComm yet (its processes "
                       "would have to agree on it): leave the defaults");
    }
    if (!options.ring_orders.empty()) {
      throw make_error(ErrorCode::unsupported, call, rank, "TeamOptions::ring_orders is not taken by IpcComm (every rank runs "
                       "the identity ring): leave it empty");
    }
  }

  // This rank's memory, exported into `mine`. Partial allocations are freed by release().
  void allocate(IpcRecord& mine, const char* call, int rank, int n) {
    const Device device(device_);
    scratch_ = static_cast<unsigned char*>(allocate_zeroed(device, mine.layout.total_bytes(), call, rank));
    signals_ = static_cast<kernel::Signals*>(allocate_zeroed(device, sizeof(kernel::Signals), call, rank));
    state_ = static_cast<kernel::RankState*>(allocate_zeroed(device, sizeof(kernel::RankState), call, rank));
    flag_ = static_cast<int*>(allocate_zeroed(device, sizeof(int), call, rank));
    views_ = static_cast<kernel::RankView*>(device.allocate(sizeof(kernel::RankView) * static_cast<std::size_t>(n), call, rank));
    const typename Device::Mapped mapped = device.allocate_mapped(sizeof(kernel::TimeoutRecord), call, rank);
    timeout_host_ = static_cast<kernel::TimeoutRecord*>(mapped.host);
    timeout_device_ = static_cast<kernel::TimeoutRecord*>(mapped.device);
    order_.eager = device.create_event(call, rank);
    // The memsets must land before a peer's kernel can see the memory.
    device.synchronize(call, rank);
    mine.scratch = device.ipc_export(scratch_, call, rank);
    mine.signals = device.ipc_export(signals_, call, rank);
  }


  // A call-scoped device allocation for a split's exchange: freed after `use`, leaked if `use` left the
  // communicator broken (its kernel may not have ended).
  template <class Use>
  void staged(std::size_t bytes, const Use& use) {
    const char* call = call_name<Device>("IpcComm::split");
    const Device device(device_);
    auto* staging = static_cast<unsigned char*>(device.allocate(bytes, call, rank()));
    try {
      use(staging, call);
    } catch (...) {
      if (!broken_) device.free(staging);
      throw;
    }
    device.free(staging);
  }

  template <class T>
  void collective_on(const runtime::CollectiveArgs& args, Stream stream) {
    const char* call = call_name<Device>("IpcComm", args.collective);
    ready(call, false);
    check_rank_collective(call, rank(), size(), args);
    const kernel::KernelAlgorithm algorithm =
        ipc_kernel_of(call, rank(), args.collective, args.algorithm, args.count * size_of(args.type), size());
    launch<T>(call, args.collective, static_cast<const T*>(args.send), static_cast<T*>(args.recv), args.count, args.op, args.root,
              algorithm, stream);
  }

  template <class T>
  void collective_with_on(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
                          kernel::KernelAlgorithm algorithm, Stream stream) {
    const char* call = call_name<Device>("IpcComm", collective);
    ready(call, false);
    check_rank_call(TeamCallShape{call, collective, algorithm, size(), count, sizeof(T), root}, rank(), send, recv);
    runtime::CollectiveArgs args;
    args.collective = collective;
    args.type = data_type_v<T>;
    args.send = send;
    args.recv = recv;
    args.count = count;
    args.op = op;
    args.root = root;
    check_rank_collective(call, rank(), size(), args);
    launch<T>(call, collective, send, recv, count, op, root, algorithm, stream);
  }

  void transfer_on(const IpcPeerCall& c, Stream stream) {
    const char* call = call_name<Device>(c.sending ? "IpcComm::send" : "IpcComm::recv");
    ready(call, true);
    if (grouping_) {
      if (group_stream_set_ && stream != group_stream_) {
        throw make_error(ErrorCode::invalid_argument, call, rank(), "its stream differs from this group's first (a group is one launch)");
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

  void barrier_on(Stream stream) {
    const char* call = call_name<Device>("IpcComm::barrier");
    ready(call, false);
    refuse_capture(call, stream);
    launch<int>(call, Collective::all_reduce, flag_, flag_, 1, ReduceOp::sum, 0,
                kernel_for_call(Collective::all_reduce, Algorithm::automatic, sizeof(int), size()), stream);
    wait();
  }

  // This rank's part of one collective: its own blocks, one cooperative launch on `stream`.
  template <class T>
  void launch(const char* call, Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
              kernel::KernelAlgorithm algorithm, Stream stream) {
    const int me = rank();
    CallBuffers buffers{};
    buffers.input[me] = send;
    buffers.output[me] = recv;
    buffers.takes_part[me] = 1;
    [[maybe_unused]] const runtime::NvtxRange range = collective_range<T>(collective, count, op, root, size(), algorithm);
    const CollectiveArgs args{collective, count, op, root, algorithm};
    enqueue(call, kernel::to_string(algorithm), Device::template collective_entry<T>(), data_type_v<T>, stream,
            [&](const Device& device, const LaunchShape& shape) {
              device.template launch_collective<T>(stream, shape, buffers, args, call, me);
            });
  }

  // This rank's sends and receives (bytes): the p2p kernel on its own blocks, one cooperative launch.
  void launch_p2p(const char* call, const kernel::P2pTable& table, Stream stream) {
    const int me = rank();
    TransferTables tables{};
    tables.table[me] = table;  // the kernel reads its own rank's table only
    enqueue(call, "p2p", Device::template transfer_entry<std::uint8_t>(), DataType::uint8, stream,
            [&](const Device& device, const LaunchShape& shape) {
              device.template launch_transfer<std::uint8_t>(stream, shape, tables, call, me);
            });
  }

  // One launch on `stream`, after this communicator's previous one (the order event), which it then marks.
  // A launch that fails leaves this rank out of step with its peers: the communicator refuses further calls.
  template <class Launch>
  void enqueue(const char* call, const char* kernel_name, const void* entry, DataType type, Stream stream, const Launch& launch_on) {
    const int me = rank();
    [[maybe_unused]] const typename Device::CurrentGuard keep_device;
    const Device device(device_);
    device.ensure_fits(co_resident_, entry, type, options_.threads, 1, blocks_, call, me);
    try {
      const typename Device::Event done = order_.before(device, stream, {timeout_host_}, call, me);
      launch_on(device, LaunchShape{views_, me, 1, blocks_, options_.threads});
      device.record(done, stream, call, me);
    } catch (...) {
      broken_ = true;
      throw;
    }
    last_stream_ = stream;
    launched_ = true;
    launched_kernel_ = kernel_name;
    launched_call_ = call;
  }

  // After the wait: an abort (this rank's abort word, written by whichever rank aborted), else this rank's
  // kernel timeout record.
  // A kernel that saw an abort gave up its wait through the timeout record, so the abort word (a read of
  // device memory: costly on a GPU) is read only when the record is set or this rank aborted.
  void raise_kernel_failure() {
    const char* call = call_name<Device>("IpcComm::wait");
    if (!timed_out(*timeout_host_) && !aborted_.load()) return;
    const std::uint32_t aborted = Device(device_).read_word(&signals_->aborted, call, rank());
    if (aborted != 0) {
      broken_ = true;
      throw make_error(ErrorCode::peer_failed, launched_call_ != nullptr ? launched_call_ : call, rank(), "rank ", aborted - 1,
                       " aborted the communicator (abort()); the kernels gave up their waits; make a new communicator");
    }
    if (timed_out(*timeout_host_)) {
      broken_ = true;
      throw timeout_error(*timeout_host_, launched_call_, launched_kernel_, env::kernel_timeout_ms());
    }
  }

  // Waits (bounded) for this rank's own work, then closes the peers' memory and frees its own. What a kernel
  // may still touch (the wait did not end) is leaked rather than freed or unmapped under it: this rank's
  // memory when its own kernel did not end, its signals when a peer still owed it a credit (ipc_quiesce.hpp).
  void release() noexcept {
    if (!peers_ && scratch_ == nullptr && signals_ == nullptr && state_ == nullptr && views_ == nullptr && flag_ == nullptr &&
        timeout_host_ == nullptr && order_.eager == typename Device::Event{}) {
      return;
    }
    [[maybe_unused]] const typename Device::CurrentGuard keep_device;
    const Device device(device_);
    bool drained = true;
    if (launched_) {
      try {
        wait_for_work(std::vector<PendingWork<Device>>{{device, order_.eager, rank()}}, std::vector<const kernel::TimeoutRecord*>{timeout_host_},
                      call_name<Device>("IpcComm::~IpcComm"));
      } catch (const std::exception& e) {
        drained = false;
        chorus::log(LogLevel::warn, "chorus::", Device::kName, "::IpcComm: not freeing its memory: ", e.what());
      }
    }
    if (!drained && peers_) peers_->keep_open();
    bool credited = drained;
    if (drained && peers_ && signals_ != nullptr && state_ != nullptr) {
      // After an abort a peer may never consume what it was sent, and the aborted kernels end within
      // microseconds of seeing the abort word: a short grace, then the signals are freed as before.
      const bool aborted = aborted_.load();
      const long bound_ms = aborted ? std::min(200L, env::kernel_timeout_ms()) : env::kernel_timeout_ms();
      try {
        credited = wait_for_peer_credits(device, signals_, state_, blocks_, rank(), size(),
                                         std::chrono::milliseconds(bound_ms), call_name<Device>("IpcComm::~IpcComm"));
      } catch (const std::exception& e) {
        credited = false;
        chorus::log(LogLevel::warn, "chorus::", Device::kName, "::IpcComm: ", e.what());
      }
      if (!credited && !aborted) {
        chorus::log(LogLevel::warn, "chorus::", Device::kName, "::IpcComm: rank ", rank(), " not freeing its signals: ",
                    "a peer has not consumed all this rank sent it within ", bound_ms, " ms and may still write its credit");
      }
      credited = credited || aborted;
    }
    peers_.reset();  // the peers' memory first
    if (drained) {
      device.free(scratch_);
      if (credited) device.free(signals_);
      device.free(state_);
      device.free(views_);
      device.free(flag_);
      if (timeout_host_ != nullptr) device.free_mapped(timeout_host_);
      order_.destroy(device);
    }
    scratch_ = nullptr;
    signals_ = nullptr;
    state_ = nullptr;
    views_ = nullptr;
    flag_ = nullptr;
    timeout_host_ = nullptr;
    timeout_device_ = nullptr;
    order_ = LaunchOrder<Device>{};
    launched_ = false;
  }

  void swap(BasicIpcComm& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(options_, other.options_);
    std::swap(co_resident_, other.co_resident_);
    std::swap(blocks_, other.blocks_);
    std::swap(bus_id_, other.bus_id_);
    std::swap(scratch_, other.scratch_);
    std::swap(signals_, other.signals_);
    std::swap(state_, other.state_);
    std::swap(views_, other.views_);
    std::swap(flag_, other.flag_);
    std::swap(timeout_host_, other.timeout_host_);
    std::swap(timeout_device_, other.timeout_device_);
    std::swap(order_, other.order_);
    std::swap(peers_, other.peers_);
    std::swap(stream_, other.stream_);
    std::swap(last_stream_, other.last_stream_);
    std::swap(launched_, other.launched_);
    std::swap(broken_, other.broken_);
    const bool aborted = aborted_.load();
    aborted_.store(other.aborted_.load());
    other.aborted_.store(aborted);
    std::swap(grouping_, other.grouping_);
    std::swap(group_, other.group_);
    std::swap(group_stream_, other.group_stream_);
    std::swap(group_stream_set_, other.group_stream_set_);
    std::swap(launched_kernel_, other.launched_kernel_);
    std::swap(launched_call_, other.launched_call_);
  }

  int device_ = 0;
  Options options_{};
  std::vector<const void*> co_resident_;  // kernels (entry point and type) confirmed to fit
  int blocks_ = 0;
  std::string bus_id_;                    // this rank's GPU, for a split's records
  unsigned char* scratch_ = nullptr;
  kernel::Signals* signals_ = nullptr;
  kernel::RankState* state_ = nullptr;
  kernel::RankView* views_ = nullptr;     // device: n views, this rank's at [rank]
  int* flag_ = nullptr;                   // device: barrier's int
  kernel::TimeoutRecord* timeout_host_ = nullptr;  // host-mapped
  kernel::TimeoutRecord* timeout_device_ = nullptr;
  LaunchOrder<Device> order_;             // reached when this communicator's last launch has run
  std::optional<IpcPeerMemory<IpcDeviceOpener<Device>>> peers_;
  Stream stream_{};                       // this communicator's own calls
  Stream last_stream_{};                  // where the last launch went
  bool launched_ = false;                 // work launched since the last wait()
  bool broken_ = false;
  std::atomic<bool> aborted_{false};
  bool grouping_ = false;
  kernel::P2pTable group_{};
  Stream group_stream_{};
  bool group_stream_set_ = false;
  const char* launched_kernel_ = "ring";
  const char* launched_call_ = nullptr;  // the last call's name, for wait()'s errors
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
