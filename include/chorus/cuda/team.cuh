// chorus::cuda::Team: ranks on GPUs of this process, running chorus's own collective kernels.
//
//   auto team = chorus::cuda::Team::virtual_ranks(0, 4);   // 4 ranks on GPU 0: tests every algorithm on one GPU
//   chorus::cuda::Team team({0, 1, 2, 3});                  // one rank per GPU, peer access enabled
//   team.all_reduce(inputs, outputs, count, ReduceOp::sum, Algorithm::ring, streams);  // all ranks, one call
//   team.transfer<float>({{0, 1, send0, recv1, count}, {1, 0, send1, recv0, count}}); // point-to-point, one launch
//   team.synchronize();                                     // bounded; a kernel timeout becomes chorus::Error
//
// Virtual ranks run in one cooperative launch (grid = ranks x blocks, at most one block per SM), so
// every block is resident and no rank can wait on a rank that never gets an SM; each rank has its own
// allocations. With one rank per GPU each device gets its own cooperative launch on its own stream.
// Each all_reduce is an NVTX range named for the kernel that runs, e.g. "chorus::all_reduce 4 MiB float32
// sum two_shot" (runtime/nvtx_range.hpp): Algorithm::automatic shows what kernel_for chose.
#pragma once

#include "../core/algorithm.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../runtime/nvtx_range.hpp"
#include "../topo/detect.hpp"
#include "collective_check.hpp"
#include "collective_kernel.cuh"
#include "kernel_choice.hpp"
#include "launch.cuh"
#include "ring_orders.hpp"
#include "runtime_check.hpp"
#include "topology_rings.hpp"
#include "transfer_kernel.cuh"
#include "transfer_plan.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace chorus::cuda {

template <class Adapter>
class BasicRankComm;
class CudaTeamAdapter;
using RankComm = BasicRankComm<CudaTeamAdapter>;  // one rank's communicator on a Team (team_comm.cuh)

struct TeamOptions {
  int blocks = 8;                            // blocks (channels) per rank, before the occupancy limit
  int threads = 512;                         // threads per block
  std::size_t staging_bytes = 8u << 20;      // one-shot / two-shot staging per rank
  std::size_t ll_bytes = 1u << 20;           // LL lines per rank
  KernelCrossovers crossovers{};             // where Algorithm::automatic switches kernels (kernel_choice.hpp)
  std::size_t fifo_slot_bytes = 128u << 10;  // Simple FIFO slot
  int fifo_depth = 4;                        // Simple FIFO slots per block
  std::uint32_t delay_seed = 0;              // nonzero: seeded per-rank delays before waits (testing)
  // Channel rings (ring_orders.hpp): block b runs on ring_orders[b % size], each position -> rank. Empty:
  // on GPUs of their own, the rings topo::search_rings finds for these devices (topology_rings.hpp), the
  // identity ring if that fails (ring_source() says why); virtual ranks: the identity ring (one GPU).
  RingOrders ring_orders;
};

// Restores the caller's current device when a Team call returns (the Team switches devices as it goes).
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() { cudaGetDevice(&device_); }
  ~CurrentDeviceGuard() { cudaSetDevice(device_); }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  int device_ = 0;
};

class Team {
 public:
  static Team virtual_ranks(int device, int ranks, TeamOptions options = {}) {
    return Team(std::vector<int>(static_cast<std::size_t>(ranks), device), options, true);
  }
  explicit Team(std::vector<int> devices, TeamOptions options = {}) : Team(std::move(devices), options, false) {}

  Team(Team&& other) noexcept { swap(other); }
  Team& operator=(Team&& other) noexcept {
    swap(other);
    return *this;
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  ~Team() { release(); }

  int size() const { return static_cast<int>(devices_.size()); }
  int device(int rank) const { return devices_.at(static_cast<std::size_t>(rank)); }
  int blocks_per_rank() const { return blocks_; }
  bool is_virtual() const { return virtual_; }
  const TeamOptions& options() const { return options_; }
  // The channel rings the ring and chain kernels run on (block b on ring b % size), and where they came from.
  const RingOrders& ring_orders() const { return rings_.orders; }
  const std::string& ring_source() const { return rings_.source; }

  // Rank `rank`'s communicator on this team (use .on(stream)), and calls for several ranks from one
  // thread (team_comm.cuh). The team must stay in place while views are in use.
  RankComm comm(int rank);
  template <class Fn>
  void group(Fn&& fn);

  // Every rank's all_reduce in one call (group semantics, as NCCL's ncclGroupStart/End around one call per
  // rank). `streams`: one per rank (each on its rank's device), or one for all; empty: the default stream.
  // Stream-ordered: returns after launching; synchronize() waits and reports a kernel's timeout.
  template <class T>
  void all_reduce(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op,
                  Algorithm algorithm = Algorithm::automatic, const std::vector<cudaStream_t>& streams = {},
                  const std::vector<bool>& takes_part = {}) {
    all_reduce_with(inputs, outputs, count, op, kernel_for(algorithm, count * sizeof(T), size(), options_.crossovers), streams, takes_part);
  }

  // all_reduce with an explicit kernel (tests, benchmarks): the same launch as every collective.
  template <class T>
  void all_reduce_with(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op,
                       kernel::KernelAlgorithm algorithm, const std::vector<cudaStream_t>& streams = {},
                       const std::vector<bool>& takes_part = {}) {
    collective_with<T>(Collective::all_reduce, inputs, outputs, count, op, 0, algorithm, streams, takes_part);
  }

  // The other collectives, every rank's buffers in one call as all_reduce takes them, with NCCL's meaning
  // of `count` and of the buffers (core/collective.hpp): broadcast reads the root's input only, reduce
  // writes the root's output only (the others' may be null). Stream-ordered, like all_reduce.
  template <class T>
  void broadcast(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, int root,
                 Algorithm algorithm = Algorithm::automatic, const std::vector<cudaStream_t>& streams = {}) {
    collective_with<T>(Collective::broadcast, inputs, outputs, count, ReduceOp::sum, root,
                       kernel_for(Collective::broadcast, algorithm, count * sizeof(T), options_.crossovers), streams);
  }
  template <class T>
  void reduce(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic, const std::vector<cudaStream_t>& streams = {}) {
    collective_with<T>(Collective::reduce, inputs, outputs, count, op, root, kernel_for(Collective::reduce, algorithm, count * sizeof(T), options_.crossovers),
                       streams);
  }
  template <class T>
  void all_gather(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t send_count,
                  Algorithm algorithm = Algorithm::automatic, const std::vector<cudaStream_t>& streams = {}) {
    collective_with<T>(Collective::all_gather, inputs, outputs, send_count, ReduceOp::sum, 0,
                       kernel_for(Collective::all_gather, algorithm, send_count * sizeof(T), options_.crossovers), streams);
  }
  template <class T>
  void reduce_scatter(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t recv_count, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic, const std::vector<cudaStream_t>& streams = {}) {
    collective_with<T>(Collective::reduce_scatter, inputs, outputs, recv_count, op, 0,
                       kernel_for(Collective::reduce_scatter, algorithm, recv_count * sizeof(T), options_.crossovers), streams);
  }
  template <class T>
  void all_to_all(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count_per_peer,
                  Algorithm algorithm = Algorithm::automatic, const std::vector<cudaStream_t>& streams = {}) {
    collective_with<T>(Collective::all_to_all, inputs, outputs, count_per_peer, ReduceOp::sum, 0,
                       kernel_for(Collective::all_to_all, algorithm, count_per_peer * sizeof(T), options_.crossovers), streams);
  }

  // Any collective with an explicit kernel (tests; see kernel::supports for which serve which).
  template <class T>
  void collective_with(Collective collective, const std::vector<const T*>& inputs, const std::vector<T*>& outputs,
                       std::size_t count, ReduceOp op, int root, kernel::KernelAlgorithm algorithm,
                       const std::vector<cudaStream_t>& streams = {}, const std::vector<bool>& takes_part = {}) {
    static const char* const names[kCollectiveCount] = {"cuda::Team::all_reduce", "cuda::Team::reduce_scatter",
                                                        "cuda::Team::all_gather", "cuda::Team::broadcast",
                                                        "cuda::Team::reduce", "cuda::Team::all_to_all"};
    const char* call = names[static_cast<int>(collective)];
    check_launch(call, streams, takes_part);
    check_team_call(TeamCallShape{call, collective, algorithm, size(), count, sizeof(T), root},
                    std::vector<const void*>(inputs.begin(), inputs.end()), std::vector<void*>(outputs.begin(), outputs.end()));
    const auto n = static_cast<std::size_t>(size());
    CallBuffers buffers{};
    for (std::size_t r = 0; r < n; ++r) {
      buffers.input[r] = inputs[r];
      buffers.output[r] = outputs[r];
      buffers.takes_part[r] = takes_part.empty() || takes_part[r] ? 1 : 0;
    }
    runtime::CallDescriptor described;
    described.kind = runtime::kind_of(collective);
    described.type = data_type_v<T>;
    described.count = count;
    described.op = op;
    described.root = root;
    const std::size_t bytes =
        std::max(send_count(collective, count, size()), recv_count(collective, count, size())) * sizeof(T);
    const runtime::NvtxRange range(described, bytes, kernel::to_string(algorithm));
    const CurrentDeviceGuard keep_device;  // the occupancy check switches devices
    check_co_resident(reinterpret_cast<const void*>(&collective_kernel<T>), data_type_v<T>, call);
    launch_cooperative(call, reinterpret_cast<const void*>(&collective_kernel<T>), streams, buffers,
                       CollectiveArgs{collective, count, op, root, algorithm});
    launched_ = algorithm;
    launched_call_ = call;
  }

  // Point-to-point transfers, every rank's at once in one launch (cuda/transfer.hpp): a rank may send and
  // receive several (send to the next rank, receive from the previous). Transfers between the same ordered
  // pair run in list order; from == to is a local copy; ranks listed in no transfer get blocks in the
  // launch that return at once. Buffers are device memory (a rank's on its own device; a send on its
  // rank's device is pushed into the receiver's scratch over peer access). Bad input is refused before
  // launching (transfer_plan.hpp: ranks, null buffers, byte size, overlapping recv buffers, more than
  // kMaxRanks sends or receives on a rank). Stream-ordered, like all_reduce; synchronize() reports a timeout.
  template <class T>
  void transfer(const std::vector<Transfer<T>>& transfers, const std::vector<cudaStream_t>& streams = {}) {
    const char* call = "cuda::Team::transfer";
    check_launch(call, streams, {});
    const std::vector<kernel::P2pTable> tables = plan_transfers(call, size(), transfers);
    TransferTables all{};
    for (std::size_t r = 0; r < tables.size(); ++r) all.table[r] = tables[r];
    const CurrentDeviceGuard keep_device;  // the occupancy check switches devices
    check_co_resident(reinterpret_cast<const void*>(&transfer_kernel<T>), data_type_v<T>, call);
    launch_cooperative(call, reinterpret_cast<const void*>(&transfer_kernel<T>), streams, all);
    launched_ = kernel::KernelAlgorithm::pairwise;
    launched_call_ = call;
  }

  // Waits for the last all_reduce on every rank's stream (bounded: CHORUS_TIMEOUT_MS plus a grace period; the kernels bound their
  // own waits by CHORUS_TIMEOUT_MS), then turns the first timeout record into chorus::Error.
  void synchronize() {
    const auto limit = std::chrono::steady_clock::now() + 2 * std::chrono::milliseconds(env::timeout_ms()) + std::chrono::seconds(5);
    const CurrentDeviceGuard keep_device;
    for (std::size_t r = 0; r < devices_.size(); r += ranks_per_launch()) {
      check_cuda(cudaSetDevice(devices_[r]), "cuda::Team::synchronize", static_cast<int>(r), "cudaSetDevice");
      cudaEvent_t done;
      check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cuda::Team::synchronize", static_cast<int>(r), "cudaEventCreate");
      // On the stream of the last launch: an event on the legacy stream would not wait for non-blocking streams.
      const cudaError_t recorded = cudaEventRecord(done, launch_streams_[r]);
      if (recorded != cudaSuccess) cudaEventDestroy(done);
      check_cuda(recorded, "cuda::Team::synchronize", static_cast<int>(r), "cudaEventRecord");
      cudaError_t status;
      while ((status = cudaEventQuery(done)) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > limit) {
          cudaEventDestroy(done);
          broken_ = true;
          throw make_error(ErrorCode::timeout, "cuda::Team::synchronize", static_cast<int>(r), "device ", devices_[r],
                           " did not finish within the bound; the kernels' own waits should have ended first");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      cudaEventDestroy(done);
      if (status != cudaSuccess) broken_ = true;
      check_cuda(status, "cuda::Team::synchronize", static_cast<int>(r), "cudaEventQuery");
    }
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      const kernel::TimeoutRecord& record = timeouts_[r];
      if (__atomic_load_n(&record.timed_out, __ATOMIC_ACQUIRE) == 0) continue;
      broken_ = true;
      throw make_error(ErrorCode::timeout, launched_call_, record.rank, kernel::to_string(launched_), " block ",
                       record.block, " waited ", env::timeout_ms(), " ms for rank ", record.peer, " (", kernel::to_string(static_cast<kernel::WaitKind>(record.wait)),
                       ", step ", record.step, "): expected ", record.expected, ", saw ", record.seen);
    }
  }

 private:
  Team(std::vector<int> devices, TeamOptions options, bool virtual_ranks) : devices_(std::move(devices)), options_(options), virtual_(virtual_ranks) {
    const char* call = virtual_ ? "cuda::Team::virtual_ranks" : "cuda::Team";
    const int n = size();
    if (n < 1 || n > kernel::kMaxRanks) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ranks must be 1..", kernel::kMaxRanks, ", got ", n));
    }
    if (!kernel::valid_fifo_depth(options_.fifo_depth) || options_.fifo_slot_bytes < kernel::kPackBytes) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": the FIFO needs a power-of-two number of slots, at least 2, of 16 bytes or more, got ",
                                                               options_.fifo_depth, " of ", options_.fifo_slot_bytes));
    }
    check_crossovers(options_.crossovers, call);
    // Two ranks on one GPU in separate launches could each wait for the other's kernel to start: use
    // virtual_ranks for that.
    for (std::size_t i = 0; !virtual_ && i < devices_.size(); ++i) {
      for (std::size_t j = i + 1; j < devices_.size(); ++j) {
        if (devices_[i] == devices_[j]) {
          throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(j), "device ", devices_[j],
                           " is also rank ", i, "'s; for several ranks on one GPU use Team::virtual_ranks");
        }
      }
    }
    if (options_.threads < 32 || options_.threads > 1024 || options_.blocks < 1 || options_.blocks > kernel::kMaxBlocks) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": threads must be 32..1024 and blocks 1..",
                                                               kernel::kMaxBlocks, ", got ", options_.threads, " and ", options_.blocks));
    }
    if (!options_.ring_orders.empty()) check_ring_orders(call, options_.ring_orders, n);
    const CurrentDeviceGuard keep_device;
    try {
      setup(call);
    } catch (...) {
      release();
      throw;
    }
  }

  int ranks_per_launch() const { return virtual_ ? size() : 1; }

  // One cooperative launch per launch group (all virtual ranks at once, else one per GPU) of a kernel
  // taking (views, shared, first_rank, blocks_per_rank, rest...), on the rank's stream. Once one launch
  // is out, a failure to launch another leaves signals half-written: the team refuses further calls.
  template <class Shared, class... Rest>
  void launch_cooperative(const char* call, const void* kernel, const std::vector<cudaStream_t>& streams, Shared shared,
                          Rest... rest) {
    const CurrentDeviceGuard keep_device;
    struct BreakUnlessDone {
      bool& broken;
      bool done = false;
      ~BreakUnlessDone() { if (!done) broken = true; }
    } break_unless_done{broken_};
    const auto n = static_cast<std::size_t>(size());
    for (std::size_t first = 0; first < n; first += ranks_per_launch()) {
      const cudaStream_t stream = streams.empty() ? cudaStream_t{} : streams[streams.size() == 1 ? 0 : first];
      launch_streams_[first] = stream;
      check_cuda(cudaSetDevice(devices_[first]), call, static_cast<int>(first), "cudaSetDevice");
      const kernel::RankView* views = views_[first];
      int first_rank = static_cast<int>(first);
      int blocks = blocks_;
      void* kernel_args[] = {&views, &shared, &first_rank, &blocks, &rest...};
      launch_rank_blocks(kernel, kernel_args, ranks_per_launch(), blocks_, options_.threads, stream, call, first_rank);
    }
    break_unless_done.done = true;
  }

  // What every call checks before launching: the team is usable, the streams and takes_part fit.
  void check_launch(const char* call, const std::vector<cudaStream_t>& streams, const std::vector<bool>& takes_part) const {
    if (broken_) throw Error(ErrorCode::peer_failed, detail::concat("chorus::", call, ": an earlier call timed out; make a new Team"));
    const auto n = static_cast<std::size_t>(size());
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
    if (!virtual_ && n > 1 && streams.size() == 1) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ranks on ", n,
                                                               " GPUs need one stream each (a stream belongs to one device)"));
    }
    if (!takes_part.empty() && takes_part.size() != n) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": takes_part must be empty or one per rank, got ", takes_part.size()));
    }
  }

  // The caller's rings; else one identity ring for virtual ranks (one GPU: every link the same); else the
  // topology's rings for these devices, matched by bus id, or the identity ring with the reason.
  RingChoice choose_rings(const char* call) const {
    const int n = size();
    if (!options_.ring_orders.empty()) return {options_.ring_orders, "given (TeamOptions::ring_orders)"};
    if (virtual_ || n == 1) return {identity_ring_orders(n), "identity ring: one GPU"};
    std::vector<std::string> busids;
    for (int r = 0; r < n; ++r) {
      char busid[32] = {};
      check_cuda(cudaDeviceGetPCIBusId(busid, sizeof busid, devices_[static_cast<std::size_t>(r)]), call, r, "cudaDeviceGetPCIBusId");
      busids.emplace_back(busid);
    }
    try {
      return ring_orders_for(topo::detect(), busids);
    } catch (const std::exception& e) {
      return {identity_ring_orders(n), detail::concat("identity ring: topology detection failed: ", e.what())};
    }
  }

  void setup(const char* call) {
    const int n = size();
    rings_ = choose_rings(call);
    for (int r = 0; r < n; ++r) {
      int cooperative = 0;
      check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, devices_[static_cast<std::size_t>(r)]), call, r,
                 "cudaDeviceGetAttribute");
      if (!cooperative) {
        throw make_error(ErrorCode::unsupported, call, r, "device ", devices_[static_cast<std::size_t>(r)],
                         " cannot launch cooperatively, so co-residency of the blocks is not guaranteed");
      }
    }
    // Blocks per rank: what the caller asked, cut so every block of a launch is resident at once. The
    // kernel's __launch_bounds__(kMaxThreadsPerBlock) makes the compiler fit a block of up to 1024 threads
    // on one SM, whatever the element type, so one block per SM is certain for every instantiation; each
    // type's own occupancy is then checked at its first launch (check_co_resident). So a program compiles
    // the kernel only for the element types it uses, not all ten.
    blocks_ = options_.blocks;
    co_resident_kernels_.assign(static_cast<std::size_t>(n), {});
    for (int r = 0; r < n; r += ranks_per_launch()) {
      blocks_ = std::min(blocks_, max_resident_blocks(devices_[static_cast<std::size_t>(r)], ranks_per_launch(), call, r));
    }
    if (blocks_ < 1) {
      throw make_error(ErrorCode::unsupported, call, 0, ranks_per_launch(),
                       " ranks in one launch need an SM each, more than the device has; use fewer virtual ranks");
    }
    layout_ = kernel::with_p2p_region(
        kernel::make_layout(options_.staging_bytes, options_.ll_bytes, options_.fifo_slot_bytes, options_.fifo_depth, blocks_), n, blocks_);
    if (kernel::two_shot_round_elements(kernel::segment_elements(options_.staging_bytes, blocks_, 8), n, blocks_, 2) == 0 ||
        kernel::ll_capacity_lines(options_.ll_bytes, n) < 2) {
      throw make_error(ErrorCode::invalid_argument, call, 0, "staging_bytes ", options_.staging_bytes, " or ll_bytes ",
                       options_.ll_bytes, " too small for ", n, " ranks x ", blocks_, " blocks");
    }
    // Distinct allocations per rank (one allocation seen at two addresses would need proxy fences).
    scratch_.assign(static_cast<std::size_t>(n), nullptr);
    signals_.assign(static_cast<std::size_t>(n), nullptr);
    states_.assign(static_cast<std::size_t>(n), nullptr);
    views_.assign(static_cast<std::size_t>(n), nullptr);
    launch_streams_.assign(static_cast<std::size_t>(n), cudaStream_t{});
    check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&timeouts_), sizeof(kernel::TimeoutRecord) * static_cast<std::size_t>(n),
                             cudaHostAllocMapped | cudaHostAllocPortable),
               call, 0, "cudaHostAlloc");
    std::memset(static_cast<void*>(timeouts_), 0, sizeof(kernel::TimeoutRecord) * static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      check_cuda(cudaSetDevice(devices_[i]), call, r, "cudaSetDevice");
      if (!virtual_) enable_peer_access(call, r);
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&scratch_[i]), layout_.total_bytes()), call, r, "cudaMalloc");
      check_cuda(cudaMemset(scratch_[i], 0, layout_.total_bytes()), call, r, "cudaMemset");
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&signals_[i]), sizeof(kernel::Signals)), call, r, "cudaMalloc");
      check_cuda(cudaMemset(signals_[i], 0, sizeof(kernel::Signals)), call, r, "cudaMemset");
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&states_[i]), sizeof(kernel::RankState)), call, r, "cudaMalloc");
      check_cuda(cudaMemset(states_[i], 0, sizeof(kernel::RankState)), call, r, "cudaMemset");
    }
    std::vector<kernel::RankView> views(static_cast<std::size_t>(n));
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
      kernel::TimeoutRecord* mapped = nullptr;
      check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), timeouts_ + r, 0), call, r, "cudaHostGetDevicePointer");
      view.timeout = mapped;
      view.timeout_ns = static_cast<std::uint64_t>(env::timeout_ms()) * 1000000u;
      view.delay_seed = options_.delay_seed;
    }
    // Each launch reads the views from its own device's memory.
    for (int r = 0; r < n; r += ranks_per_launch()) {
      const auto i = static_cast<std::size_t>(r);
      check_cuda(cudaSetDevice(devices_[i]), call, r, "cudaSetDevice");
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&views_[i]), sizeof(kernel::RankView) * views.size()), call, r, "cudaMalloc");
      check_cuda(cudaMemcpy(views_[i], views.data(), sizeof(kernel::RankView) * views.size(), cudaMemcpyHostToDevice), call, r,
                 "cudaMemcpy");
    }
    check_cuda(cudaDeviceSynchronize(), call, 0, "cudaDeviceSynchronize");
  }

  // The first launch of each element type on a team asks the occupancy API whether that type's kernel
  // really fits blocks_ x ranks per launch at once (certain under the launch bounds; checked, since a
  // cooperative launch that does not fit fails, and this says why).
  void check_co_resident(const void* kernel, DataType type, const char* call) {
    for (std::size_t first = 0; first < devices_.size(); first += static_cast<std::size_t>(ranks_per_launch())) {
      std::vector<const void*>& checked = co_resident_kernels_[first];
      ensure_kernel_fits(checked, kernel, type, devices_[first], options_.threads, ranks_per_launch(), blocks_, call,
                         static_cast<int>(first));
    }
  }

  void enable_peer_access(const char* call, int rank) {
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const int peer = devices_[k];
      const int self = devices_[static_cast<std::size_t>(rank)];
      if (peer == self) continue;
      int can = 0;
      check_cuda(cudaDeviceCanAccessPeer(&can, self, peer), call, rank, "cudaDeviceCanAccessPeer");
      if (!can) throw make_error(ErrorCode::unsupported, call, rank, "device ", self, " cannot access device ", peer, " (no peer access)");
      const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // clear the sticky-free error so later checks do not see it
      } else {
        check_cuda(status, call, rank, "cudaDeviceEnablePeerAccess");
      }
    }
  }

  void release() noexcept {
    const CurrentDeviceGuard keep_device;
    for (std::size_t i = 0; i < scratch_.size(); ++i) {
      cudaSetDevice(devices_[i]);
      if (scratch_[i]) cudaFree(scratch_[i]);
      if (signals_[i]) cudaFree(signals_[i]);
      if (states_[i]) cudaFree(states_[i]);
      if (views_[i]) cudaFree(views_[i]);
    }
    scratch_.clear();
    signals_.clear();
    states_.clear();
    views_.clear();
    if (timeouts_) cudaFreeHost(timeouts_);
    timeouts_ = nullptr;
  }

  void swap(Team& other) noexcept {
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
    std::swap(launch_streams_, other.launch_streams_);
    std::swap(co_resident_kernels_, other.co_resident_kernels_);
    std::swap(timeouts_, other.timeouts_);
    std::swap(broken_, other.broken_);
    std::swap(launched_, other.launched_);
    std::swap(launched_call_, other.launched_call_);
    // The per-rank views' state points at the Team object it was made for: neither side keeps it (views
    // made before a move must not be used after it; new ones are made on demand).
    comm_state_.reset();
    other.comm_state_.reset();
  }

  std::vector<int> devices_;
  TeamOptions options_{};
  RingChoice rings_;
  bool virtual_ = false;
  int blocks_ = 0;
  kernel::ScratchLayout layout_{};
  std::vector<unsigned char*> scratch_;
  std::vector<kernel::Signals*> signals_;
  std::vector<kernel::RankState*> states_;
  std::vector<kernel::RankView*> views_;
  std::vector<cudaStream_t> launch_streams_;  // per launch (first rank of it): where the last call went
  std::vector<std::vector<const void*>> co_resident_kernels_;  // per launch: kernels (entry point and type) checked to fit
  kernel::TimeoutRecord* timeouts_ = nullptr;
  bool broken_ = false;
  kernel::KernelAlgorithm launched_ = kernel::KernelAlgorithm::ring;
  const char* launched_call_ = "cuda::Team::all_reduce";  // the last call's name, for synchronize()'s timeout message
  std::shared_ptr<void> comm_state_;  // a RankComm of this team, made by the first comm()
};

}  // namespace chorus::cuda

#include "team_comm.cuh"
