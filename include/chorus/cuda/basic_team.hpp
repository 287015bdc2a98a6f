// BasicTeam<Device>: ranks of this process on one or more GPUs running chorus's own collective kernels,
// written once over a Device (device/device.hpp): cuda::Team is BasicTeam<CudaDevice> (team.cuh),
// cuda::twin::Team is BasicTeam<TwinDevice> (twin/twin_team.hpp), so the twin runs this very code.
//
//   auto team = chorus::cuda::Team::virtual_ranks(0, 4);   // 4 ranks on GPU 0: every algorithm on one GPU
//   chorus::cuda::Team team({0, 1, 2, 3});                  // one rank per GPU, peer access enabled
//   team.all_reduce(inputs, outputs, count, ReduceOp::sum, Algorithm::ring, streams);  // all ranks, one call
//   team.transfer<float>({{0, 1, send0, recv1, count}, {1, 0, send1, recv0, count}}); // point-to-point
//   team.synchronize();                                     // bounded; a kernel timeout becomes chorus::Error
//
// Every call is stream-ordered: it returns once its launch is enqueued; the work runs when the stream
// reaches it; synchronize() waits for this team's work (only its own: an event follows each launch) and
// reports a kernel's timeout. The team orders its own work across the streams it is given, as NCCL does:
// each launch waits for the team's previous one (an event per launch group), so two calls on two streams
// never share the kernels' barrier epochs, FIFO counters or staging at once.
//
// Virtual ranks run in one cooperative launch (grid = ranks x blocks, at most one block per SM on a GPU),
// so every block is resident and no rank waits on a rank that never gets an SM. With one rank per GPU
// each device gets its own launch on its own stream. abort() releases every kernel that waits, and the
// team refuses further calls; so does a kernel timeout.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/nvtx_range.hpp"
#include "../topo/detect.hpp"
#include "call_names.hpp"
#include "device/device.hpp"
#include "collective_check.hpp"
#include "kernel/launch_args.hpp"
#include "kernel_choice.hpp"
#include "launch_range.hpp"
#include "launch_order.hpp"
#include "launch_wait.hpp"
#include "ring_orders.hpp"
#include "team_options.hpp"
#include "timeout_error.hpp"
#include "topology_rings.hpp"
#include "transfer.hpp"
#include "transfer_plan.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

class TwinDevice;
template <class Adapter>
class BasicRankComm;
template <class Device>
class TeamAdapter;

template <class Device>
class BasicTeam {
 public:
  using Stream = typename Device::Stream;
  using Options = BasicTeamOptions<Device>;

  // `ranks` ranks on GPU `device`, all in one launch.
  static BasicTeam virtual_ranks(int device, int ranks, Options options = {}) {
    return BasicTeam(std::vector<int>(static_cast<std::size_t>(std::max(ranks, 0)), device), std::move(options), true, ranks);
  }
  // One rank per GPU: devices[r] is rank r's.
  explicit BasicTeam(std::vector<int> devices, Options options = {})
      : BasicTeam(std::move(devices), std::move(options), false, -1) {}
  // The CPU twin's shorthand: `ranks` virtual ranks on twin device 0.
  template <class D = Device, std::enable_if_t<std::is_same<D, TwinDevice>::value, int> = 0>
  explicit BasicTeam(int ranks, Options options = {})
      : BasicTeam(std::vector<int>(static_cast<std::size_t>(std::max(ranks, 0)), 0), std::move(options), true, ranks) {}

  BasicTeam(BasicTeam&& other) noexcept { swap(other); }
  BasicTeam& operator=(BasicTeam&& other) noexcept {
    swap(other);
    return *this;
  }
  BasicTeam(const BasicTeam&) = delete;
  BasicTeam& operator=(const BasicTeam&) = delete;
  // The views' state goes first: its barrier ints are freed after the team's work, while the team still is.
  ~BasicTeam() {
    comm_state_.reset();
    release();
  }

  int size() const { return static_cast<int>(devices_.size()); }
  int device(int rank) const { return devices_.at(static_cast<std::size_t>(rank)); }
  int blocks_per_rank() const { return blocks_; }
  bool is_virtual() const { return virtual_; }
  const Options& options() const { return options_; }
  const kernel::ScratchLayout& layout() const { return layout_; }
  // The channel rings the ring and chain kernels run on (block b on ring b % size), and where they came from.
  const RingOrders& ring_orders() const { return rings_.orders; }
  const std::string& ring_source() const { return rings_.source; }

  // Rank `rank`'s communicator on this team (team_comm.hpp; use .on(stream) on a GPU), and calls for
  // several ranks from one thread. The team must stay in place while views are in use.
  BasicRankComm<TeamAdapter<Device>> comm(int rank);
  template <class Fn>
  void group(Fn&& fn);

  // Every rank's all_reduce in one call (group semantics, as NCCL's ncclGroupStart/End around one call per
  // rank). `streams`: one per rank (each on its rank's device), or one for all; empty: the default stream.
  // `takes_part` (tests): ranks marked false skip the call, and the others time out.
  template <class T>
  void all_reduce(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op,
                  Algorithm algorithm = Algorithm::automatic, const std::vector<Stream>& streams = {},
                  const std::vector<bool>& takes_part = {}) {
    collective_with<T>(Collective::all_reduce, inputs, outputs, count, op, 0,
                       kernel_of(Collective::all_reduce, algorithm, count * sizeof(T)), streams, takes_part);
  }
  // all_reduce with an explicit kernel (tests, benchmarks).
  template <class T>
  void all_reduce_with(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op,
                       kernel::KernelAlgorithm algorithm, const std::vector<Stream>& streams = {},
                       const std::vector<bool>& takes_part = {}) {
    collective_with<T>(Collective::all_reduce, inputs, outputs, count, op, 0, algorithm, streams, takes_part);
  }

  // The other collectives, every rank's buffers in one call, with NCCL's meaning of `count` and of the
  // buffers (core/collective.hpp): broadcast reads the root's input only, reduce writes the root's output
  // only (the others' may be null).
  template <class T>
  void broadcast(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, int root,
                 Algorithm algorithm = Algorithm::automatic, const std::vector<Stream>& streams = {}) {
    collective_with<T>(Collective::broadcast, inputs, outputs, count, ReduceOp::sum, root,
                       kernel_of(Collective::broadcast, algorithm, count * sizeof(T)), streams);
  }
  template <class T>
  void reduce(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic, const std::vector<Stream>& streams = {}) {
    collective_with<T>(Collective::reduce, inputs, outputs, count, op, root, kernel_of(Collective::reduce, algorithm, count * sizeof(T)),
                       streams);
  }
  template <class T>
  void all_gather(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t send_count,
                  Algorithm algorithm = Algorithm::automatic, const std::vector<Stream>& streams = {}) {
    collective_with<T>(Collective::all_gather, inputs, outputs, send_count, ReduceOp::sum, 0,
                       kernel_of(Collective::all_gather, algorithm, send_count * sizeof(T)), streams);
  }
  template <class T>
  void reduce_scatter(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t recv_count, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic, const std::vector<Stream>& streams = {}) {
    collective_with<T>(Collective::reduce_scatter, inputs, outputs, recv_count, op, 0,
                       kernel_of(Collective::reduce_scatter, algorithm, recv_count * sizeof(T)), streams);
  }
  template <class T>
  void all_to_all(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count_per_peer,
                  Algorithm algorithm = Algorithm::automatic, const std::vector<Stream>& streams = {}) {
    collective_with<T>(Collective::all_to_all, inputs, outputs, count_per_peer, ReduceOp::sum, 0,
                       kernel_of(Collective::all_to_all, algorithm, count_per_peer * sizeof(T)), streams);
  }

  // Any collective with an explicit kernel (tests; kernel::supports says which serve which). Every rank's
  // arguments pass the runtime's check (runtime/call_check.hpp: type, op, root, null buffers, sizes,
  // overlapping buffers) before anything is enqueued.
  template <class T>
  void collective_with(Collective collective, const std::vector<const T*>& inputs, const std::vector<T*>& outputs,
                       std::size_t count, ReduceOp op, int root, kernel::KernelAlgorithm algorithm,
                       const std::vector<Stream>& streams = {}, const std::vector<bool>& takes_part = {}) {
    const char* call = call_name<Device>("Team", collective);
    check_launch(call, streams, takes_part);
    check_team_call(TeamCallShape{call, collective, algorithm, size(), count, sizeof(T), root},
                    std::vector<const void*>(inputs.begin(), inputs.end()), std::vector<void*>(outputs.begin(), outputs.end()));
    CallBuffers buffers{};
    for (int r = 0; r < size(); ++r) {
      const auto i = static_cast<std::size_t>(r);
      check_rank_arguments(call, r, size(), collective, data_type_v<T>, inputs[i], outputs[i], count, op, root);
      buffers.input[r] = inputs[i];
      buffers.output[r] = outputs[i];
      buffers.takes_part[r] = takes_part.empty() || takes_part[i] ? 1 : 0;
    }
    [[maybe_unused]] const runtime::NvtxRange range = collective_range<T>(collective, count, op, root, size(), algorithm);
    const CollectiveArgs args{collective, count, op, root, algorithm};
    launch_all(call, kernel::to_string(algorithm), Device::template collective_entry<T>(), data_type_v<T>, streams,
               [&](const Device& device, Stream stream, const LaunchShape& shape, int first) {
                 device.template launch_collective<T>(stream, shape, buffers, args, call, first);
               });
  }

  // Point-to-point transfers, every rank's at once in one launch (cuda/transfer.hpp): a rank may send and
  // receive several (send to the next rank, receive from the previous). Transfers between the same ordered
  // pair run in list order; from == to is a local copy; ranks listed in no transfer (or marked false in
  // `takes_part`) return at once. Bad input is refused before launching (transfer_plan.hpp).
  template <class T>
  void transfer(const std::vector<Transfer<T>>& transfers, const std::vector<Stream>& streams = {},
                const std::vector<bool>& takes_part = {}) {
    const char* call = call_name<Device>("Team::transfer");
    check_launch(call, streams, takes_part);
    const std::vector<kernel::P2pTable> tables = plan_transfers(call, size(), transfers);
    TransferTables all{};
    for (std::size_t r = 0; r < tables.size(); ++r) {
      if (takes_part.empty() || takes_part[r]) all.table[r] = tables[r];
    }
    launch_all(call, "p2p", Device::template transfer_entry<T>(), data_type_v<T>, streams,
               [&](const Device& device, Stream stream, const LaunchShape& shape, int first) {
                 device.template launch_transfer<T>(stream, shape, all, call, first);
               });
  }

  // Waits (bounded: launch_wait.hpp) for this team's work so far, then turns the first kernel timeout
  // record into chorus::Error, or an abort into peer_failed; the team then refuses further calls. Refused,
  // leaving the team usable, while a stream it launched on is being captured (a graph cannot be waited for).
  void synchronize() {
    const char* call = call_name<Device>("Team::synchronize");
    if (scratch_.empty()) return;  // a moved-from or released team has no work
    const typename Device::CurrentGuard keep_device;
    for (std::size_t first = 0; first < devices_.size(); first += group_size()) {
      if (launched_[first] && device_of(first).capturing(last_stream_[first])) {
        throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(first),
                         "its last call's stream is being captured into a graph: a host wait is not allowed during capture "
                         "(end the capture first; the team stays usable)");
      }
    }
    std::vector<PendingWork<Device>> pending;
    for (std::size_t first = 0; first < devices_.size(); first += group_size()) {
      if (launched_[first]) pending.push_back({device_of(first), order_[first].eager, static_cast<int>(first)});
    }
    std::vector<const kernel::TimeoutRecord*> records;
    for (std::size_t r = 0; r < devices_.size(); ++r) records.push_back(timeouts_host_ + r);
    try {
      wait_for_work(pending, records, call);
    } catch (...) {
      broken_ = true;
      throw;
    }
    // Nothing outstanding: a later wait need not look at a stream the caller may have destroyed since.
    std::fill(launched_.begin(), launched_.end(), 0);
    raise_kernel_failure(call);
  }

  // Releases every kernel of this team that waits (their waits poll the abort word) and makes the team
  // refuse further calls; synchronize() then reports peer_failed. Returns at once; safe from any thread.
  void abort() {
    const char* call = call_name<Device>("Team::abort");
    const typename Device::CurrentGuard keep_device;
    for (std::size_t r = 0; r < signals_.size(); ++r) {
      device_of(r).write_word(&signals_[r]->aborted, kAbortedByHost, call, static_cast<int>(r));
    }
    aborted_ = true;
  }

  // Tests and teaching: rank r's counters and scratch, read or written through the device (after
  // synchronize(): the twin's memory is the host's, a GPU's is copied).
  kernel::BlockCounters counters(int rank, int block) const { return read_state(rank).block[block]; }
  kernel::TreeCounters tree_counters(int rank, int block) const { return read_state(rank).tree[block]; }
  kernel::P2pCounters p2p_counters(int rank, int block) const { return read_state(rank).p2p[block]; }
  unsigned char* scratch(int rank) { return scratch_.at(static_cast<std::size_t>(rank)); }
  // Puts every counter and signal where `value` barriers, LL calls and FIFO steps would have left them,
  // on every rank (the abort word stays clear): how tests reach the 32-bit wrap without 2^32 calls.
  void advance_counters_to(std::uint32_t value) {
    const char* call = call_name<Device>("Team::advance_counters_to");
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      kernel::Signals signals = filled<kernel::Signals>(value);
      signals.aborted = 0;
      const kernel::RankState state = filled<kernel::RankState>(value);
      device_of(r).copy(signals_[r], &signals, sizeof signals, call, static_cast<int>(r));
      device_of(r).copy(states_[r], &state, sizeof state, call, static_cast<int>(r));
    }
  }

 private:
  static constexpr std::uint32_t kAbortedByHost = 0xffffffffu;  // Signals::aborted for a team's abort()

  BasicTeam(std::vector<int> devices, Options options, bool virtual_ranks, int asked_ranks)
      : devices_(std::move(devices)), options_(std::move(options)), virtual_(virtual_ranks) {
    const char* call = call_name<Device>("Team");
    check_team_options(options_, asked_ranks >= 0 ? asked_ranks : size(), call, -1);
    // Two ranks on one GPU in separate launches could each wait for the other's kernel to start.
    for (std::size_t i = 0; !virtual_ && i < devices_.size(); ++i) {
      for (std::size_t j = i + 1; j < devices_.size(); ++j) {
        if (devices_[i] == devices_[j]) {
          throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(j), "device ", devices_[j], " is also rank ", i,
                           "'s; for several ranks on one GPU use ", Device::kName, "::Team::virtual_ranks");
        }
      }
    }
    const typename Device::CurrentGuard keep_device;
    try {
      setup(call);
    } catch (...) {
      release();
      throw;
    }
  }

  std::size_t group_size() const { return virtual_ ? devices_.size() : 1; }
  Device device_of(std::size_t rank) const { return Device(devices_[rank]); }

  kernel::KernelAlgorithm kernel_of(Collective collective, Algorithm algorithm, std::size_t bytes) const {
    return collective == Collective::all_reduce ? kernel_for(algorithm, bytes, size(), options_.crossovers)
                                                : kernel_for(collective, algorithm, bytes, options_.crossovers);
  }

  // The runtime's per-rank check (what host::Comm checks), on the rank's own buffers.
  static void check_rank_arguments(const char* call, int rank, int ranks, Collective collective, DataType type, const void* input,
                                   void* output, std::size_t count, ReduceOp op, int root) {
    runtime::CollectiveArgs args;
    args.collective = collective;
    args.type = type;
    args.send = input;
    args.recv = output;
    args.count = count;
    args.op = op;
    args.root = root;
    check_rank_collective(call, rank, ranks, args);
  }

  // One launch per launch group (all virtual ranks at once, else one per GPU), each on its rank's stream
  // after the team's previous launch there (the order event), which it then marks. Once one launch is out,
  // a failure to launch another leaves signals half-written: the team refuses further calls.
  template <class Launch>
  void launch_all(const char* call, const char* kernel_name, const void* entry, DataType type, const std::vector<Stream>& streams,
                  const Launch& launch) {
    const typename Device::CurrentGuard keep_device;
    for (std::size_t first = 0; first < devices_.size(); first += group_size()) {
      device_of(first).ensure_fits(co_resident_[first], entry, type, options_.threads, static_cast<int>(group_size()), blocks_, call,
                                   static_cast<int>(first));
    }
    struct BreakUnlessDone {
      bool& broken;
      bool done = false;
      ~BreakUnlessDone() {
        if (!done) broken = true;
      }
    } break_unless_done{broken_};
    std::vector<const kernel::TimeoutRecord*> records;
    for (std::size_t r = 0; r < devices_.size(); ++r) records.push_back(timeouts_host_ + r);
    for (std::size_t first = 0; first < devices_.size(); first += group_size()) {
      const Stream stream = streams.empty() ? Stream{} : streams[streams.size() == 1 ? 0 : first];
      const Device device = device_of(first);
      const int rank = static_cast<int>(first);
      const typename Device::Event done = order_[first].before(device, stream, records, call, rank);
      launch(device, stream, LaunchShape{views_[first], rank, static_cast<int>(group_size()), blocks_, options_.threads}, rank);
      device.record(done, stream, call, rank);
      last_stream_[first] = stream;
      launched_[first] = true;
    }
    break_unless_done.done = true;
    launched_kernel_ = kernel_name;
    launched_call_ = call;
  }

  // What every call checks before launching: the team is usable, the streams and takes_part fit.
  void check_launch(const char* call, const std::vector<Stream>& streams, const std::vector<bool>& takes_part) const {
    if (scratch_.empty()) throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": called on a moved-from team"));
    if (aborted_) throw Error(ErrorCode::peer_failed, detail::concat("chorus::", call, ": the team was aborted; make a new Team"));
    if (broken_) throw Error(ErrorCode::peer_failed, detail::concat("chorus::", call, ": an earlier call failed; make a new Team"));
    const auto n = devices_.size();
    if (!streams.empty() && streams.size() != 1 && streams.size() != n) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": streams must be empty, one, or one per rank, got ", streams.size()));
    }
    // Virtual ranks run in one launch, so on one stream; ranks on different GPUs each need their own.
    for (std::size_t r = 1; virtual_ && streams.size() == n && r < n; ++r) {
      if (streams[r] != streams[0]) {
        throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(r),
                         "virtual ranks run in one launch: give one stream (or the same for every rank)");
      }
    }
    if (!virtual_ && n > 1 && streams.size() == 1 && streams[0] != Stream{}) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ranks on ", n,
                                                               " GPUs need one stream each (a stream belongs to one device)"));
    }
    if (!takes_part.empty() && takes_part.size() != n) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": takes_part must be empty or one per rank, got ", takes_part.size()));
    }
  }

  // After the wait: an abort or the first timeout record. A kernel that saw the abort gave up its wait
  // through its timeout record, so the abort words (reads of device memory: costly on a GPU) are read only
  // when a record is set or the team was aborted.
  void raise_kernel_failure(const char* call) {
    bool any_record = aborted_;
    for (std::size_t r = 0; r < devices_.size(); ++r) any_record = any_record || timed_out(timeouts_host_[r]);
    if (!any_record) return;
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      const std::uint32_t aborted = device_of(r).read_word(&signals_[r]->aborted, call, static_cast<int>(r));
      if (aborted == 0) continue;
      broken_ = true;
      throw make_error(ErrorCode::peer_failed, launched_call_, static_cast<int>(r), "the team was aborted (abort()); its kernels gave up "
                       "their waits; make a new Team");
    }
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      const kernel::TimeoutRecord& record = timeouts_host_[r];
      if (!timed_out(record)) continue;
      broken_ = true;
      throw timeout_error(record, launched_call_, launched_kernel_, env::kernel_timeout_ms());
    }
  }

  // The caller's rings; else one identity ring for virtual ranks (one GPU: every link the same); else the
  // topology's rings for these devices, matched by bus id, or the identity ring with the reason.
  RingChoice choose_rings(const char* call) const {
    const int n = size();
    if (!options_.ring_orders.empty()) return {options_.ring_orders, "given (TeamOptions::ring_orders)"};
    if (virtual_ || n == 1) return {identity_ring_orders(n), "identity ring: one GPU"};
    std::vector<std::string> busids;
    for (int r = 0; r < n; ++r) busids.push_back(device_of(static_cast<std::size_t>(r)).bus_id(call, r));
    try {
      return ring_orders_for(topo::detect(), busids);
    } catch (const std::exception& e) {
      return {identity_ring_orders(n), detail::concat("identity ring: topology detection failed: ", e.what())};
    }
  }

  void setup(const char* call) {
    const int n = size();
    const auto count = static_cast<std::size_t>(n);
    rings_ = choose_rings(call);
    for (int r = 0; r < n; ++r) device_of(static_cast<std::size_t>(r)).check_cooperative(call, r);
    // Blocks per rank: what the caller asked, cut so every block of a launch is resident at once. Each
    // element type's own occupancy is then checked at its first launch (ensure_fits), so a program
    // compiles the kernel only for the element types it uses.
    blocks_ = options_.blocks;
    for (std::size_t first = 0; first < count; first += group_size()) {
      blocks_ = std::min(blocks_, device_of(first).max_resident_blocks(static_cast<int>(group_size()), call, static_cast<int>(first)));
    }
    if (blocks_ < 1) {
      throw make_error(ErrorCode::unsupported, call, 0, group_size(), " ranks in one launch need an SM each, more than the device has; use fewer virtual ranks");
    }
    check_team_sizes(options_, n, blocks_, call, -1);
    layout_ = team_layout(options_, n, blocks_);
    scratch_.assign(count, nullptr);
    signals_.assign(count, nullptr);
    states_.assign(count, nullptr);
    views_.assign(count, nullptr);
    order_.assign(count, LaunchOrder<Device>{});
    last_stream_.assign(count, Stream{});
    launched_.assign(count, false);
    co_resident_.assign(count, {});
    const typename Device::Mapped mapped = device_of(0).allocate_mapped(sizeof(kernel::TimeoutRecord) * count, call, 0);
    timeouts_host_ = static_cast<kernel::TimeoutRecord*>(mapped.host);
    timeouts_device_ = static_cast<kernel::TimeoutRecord*>(mapped.device);
    // Distinct allocations per rank (one allocation seen at two addresses would need proxy fences).
    for (int r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      const Device device = device_of(i);
      if (!virtual_) {
        for (int peer : devices_) device.enable_peer_access(peer, call, r);
      }
      scratch_[i] = static_cast<unsigned char*>(allocate_zeroed(device, layout_.total_bytes(), call, r));
      signals_[i] = static_cast<kernel::Signals*>(allocate_zeroed(device, sizeof(kernel::Signals), call, r));
      states_[i] = static_cast<kernel::RankState*>(allocate_zeroed(device, sizeof(kernel::RankState), call, r));
    }
    std::vector<kernel::RankView> views(count);
    for (int r = 0; r < n; ++r) {
      kernel::RankView& view = views[static_cast<std::size_t>(r)];
      view.rank = r;
      view.nranks = n;
      view.blocks = blocks_;
      view.layout = layout_;
      for (int k = 0; k < n; ++k) {
        view.scratch[k] = scratch_[static_cast<std::size_t>(k)];
        view.signals[k] = signals_[static_cast<std::size_t>(k)];
      }
      fill_rings(view, rings_.orders);
      view.state = states_[static_cast<std::size_t>(r)];
      view.timeout = timeouts_device_ + r;
      view.timeout_ns = static_cast<std::uint64_t>(env::kernel_timeout_ms()) * 1000000u;
      view.delay_seed = options_.delay_seed;
    }
    // Each launch reads the views from its own device's memory, and orders itself after the team's
    // previous launch through its group's event.
    for (std::size_t first = 0; first < count; first += group_size()) {
      const Device device = device_of(first);
      views_[first] = static_cast<kernel::RankView*>(device.allocate(sizeof(kernel::RankView) * count, call, static_cast<int>(first)));
      device.copy(views_[first], views.data(), sizeof(kernel::RankView) * count, call, static_cast<int>(first));
      order_[first].eager = device.create_event(call, static_cast<int>(first));
    }
    // Every device's memsets must land before any kernel (on any stream) can touch the memory.
    for (std::size_t r = 0; r < count; ++r) {
      if (r == 0 || std::find(devices_.begin(), devices_.begin() + static_cast<std::ptrdiff_t>(r), devices_[r]) ==
                        devices_.begin() + static_cast<std::ptrdiff_t>(r)) {
        device_of(r).synchronize(call, static_cast<int>(r));
      }
    }
  }


  kernel::RankState read_state(int rank) const {
    kernel::RankState state{};
    const auto i = static_cast<std::size_t>(rank);
    device_of(i).copy(&state, states_.at(i), sizeof state, call_name<Device>("Team::counters"), rank);
    return state;
  }

  template <class Words>
  static Words filled(std::uint32_t value) {
    static_assert(std::is_trivially_copyable<Words>::value && sizeof(Words) % sizeof(std::uint32_t) == 0, "a struct of uint32 counters");
    const std::vector<std::uint32_t> words(sizeof(Words) / sizeof(std::uint32_t), value);
    Words target;
    std::memcpy(&target, words.data(), sizeof(Words));
    return target;
  }

  // Waits for the team's own work (bounded; errors ignored), then frees. Memory a kernel may still touch
  // (its wait did not end) is leaked rather than freed under it.
  void release() noexcept {
    if (devices_.empty()) return;
    const typename Device::CurrentGuard keep_device;
    bool drained = true;
    try {
      std::vector<PendingWork<Device>> pending;
      for (std::size_t first = 0; first < order_.size(); first += group_size()) {
        if (launched_[first]) pending.push_back({device_of(first), order_[first].eager, static_cast<int>(first)});
      }
      std::vector<const kernel::TimeoutRecord*> records;
      for (std::size_t r = 0; timeouts_host_ != nullptr && r < devices_.size(); ++r) records.push_back(timeouts_host_ + r);
      wait_for_work(pending, records, call_name<Device>("Team::~Team"));
    } catch (const std::exception& e) {
      drained = false;
      chorus::log(LogLevel::warn, "chorus::", Device::kName, "::Team: not freeing its memory: ", e.what());
    }
    for (std::size_t i = 0; drained && i < scratch_.size(); ++i) {
      const Device device = device_of(i);
      device.free(scratch_[i]);
      device.free(signals_[i]);
      device.free(states_[i]);
      device.free(views_[i]);
      order_[i].destroy(device);
    }
    if (drained && timeouts_host_ != nullptr) device_of(0).free_mapped(timeouts_host_);
    scratch_.clear();
    signals_.clear();
    states_.clear();
    views_.clear();
    order_.clear();
    launched_.clear();
    timeouts_host_ = nullptr;
    timeouts_device_ = nullptr;
  }

  void swap(BasicTeam& other) noexcept {
    std::swap(devices_, other.devices_);
    std::swap(options_, other.options_);
    std::swap(rings_, other.rings_);
    std::swap(virtual_, other.virtual_);
    std::swap(blocks_, other.blocks_);
    std::swap(layout_, other.layout_);
    std::swap(scratch_, other.scratch_);
    std::swap(signals_, other.signals_);
    std::swap(states_, other.states_);
    std::swap(views_, other.views_);
    std::swap(order_, other.order_);
    std::swap(last_stream_, other.last_stream_);
    std::swap(launched_, other.launched_);
    std::swap(co_resident_, other.co_resident_);
    std::swap(timeouts_host_, other.timeouts_host_);
    std::swap(timeouts_device_, other.timeouts_device_);
    std::swap(broken_, other.broken_);
    std::swap(aborted_, other.aborted_);
    std::swap(launched_kernel_, other.launched_kernel_);
    std::swap(launched_call_, other.launched_call_);
    // The per-rank views' state points at the team object it was made for: neither side keeps it (views
    // made before a move must not be used after it; new ones are made on demand).
    comm_state_.reset();
    other.comm_state_.reset();
  }

  std::vector<int> devices_;
  Options options_{};
  RingChoice rings_;
  bool virtual_ = false;
  int blocks_ = 0;
  kernel::ScratchLayout layout_{};
  std::vector<unsigned char*> scratch_;        // by rank, on its device
  std::vector<kernel::Signals*> signals_;
  std::vector<kernel::RankState*> states_;
  std::vector<kernel::RankView*> views_;       // by launch group (its first rank): every rank's view
  std::vector<LaunchOrder<Device>> order_;  // by launch group: reached when the team's last launch there ran
  std::vector<Stream> last_stream_;            // by launch group: where the last launch went
  std::vector<char> launched_;                 // by launch group: anything launched yet
  std::vector<std::vector<const void*>> co_resident_;  // by launch group: kernels checked to fit
  kernel::TimeoutRecord* timeouts_host_ = nullptr;     // by rank, host-mapped
  kernel::TimeoutRecord* timeouts_device_ = nullptr;
  bool broken_ = false;
  bool aborted_ = false;
  const char* launched_kernel_ = "ring";
  const char* launched_call_ = "Team";  // the last call's name, for synchronize()'s errors
  std::shared_ptr<void> comm_state_;     // the per-rank views' shared state, made by the first comm()
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
