// The CPU twin of chorus's CUDA collective kernels: n ranks whose scratch, signals and counters are host
// memory, and whose blocks and lanes are threads (ranks x blocks x lanes of them), running the very kernel
// bodies the GPU runs (cuda/kernel/). It is how the kernels are proven where no GPU exists, under
// AddressSanitizer and ThreadSanitizer, and a way to watch a GPU algorithm on a laptop.
//
//   chorus::cuda::twin::Team team(4, {/*blocks*/ 2, /*lanes*/ 4});
//   team.all_reduce(inputs, outputs, count, ReduceOp::sum, kernel::KernelAlgorithm::ring);  // all ranks at once
//   team.all_gather(inputs, outputs, send_count, kernel::KernelAlgorithm::one_shot);        // and the others
//   team.transfer<float>({{0, 1, send0, recv1, count}, {1, 0, send1, recv0, count}});       // point-to-point
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../collective_check.hpp"
#include "../kernel_choice.hpp"
#include "../kernel/collective.hpp"
#include "../kernel/p2p.hpp"
#include "../ring_orders.hpp"
#include "../transfer_plan.hpp"
#include "../timeout_error.hpp"
#include "block_threads.hpp"
#include "host_block.hpp"

namespace chorus::cuda {
template <class Adapter>
class BasicRankComm;
}  // namespace chorus::cuda

namespace chorus::cuda::twin {

class TeamAdapter;
using RankComm = BasicRankComm<TeamAdapter>;  // one rank's communicator on a Team (twin_comm.hpp)

struct Options {
  int blocks = 2;                          // blocks (channels) per rank
  int lanes = 4;                           // threads per block
  std::size_t staging_bytes = 64 * 1024;   // one-shot / two-shot staging (and two-shot results) per rank
  std::size_t ll_bytes = 16 * 1024;        // LL lines per rank
  KernelCrossovers crossovers{};           // where Algorithm::automatic switches kernels (per-rank views)
  std::size_t fifo_slot_bytes = 4 * 1024;  // Simple FIFO slot (ring and chain; the tree's per-link FIFOs too)
  int fifo_depth = 4;                      // Simple FIFO slots per block (and per tree link)
  // Channel rings (ring_orders.hpp): block b runs on ring_orders[b % size] (position -> rank each);
  // empty: the one ring 0, 1, ..., n-1 (virtual ranks on one machine: every link is the same).
  RingOrders ring_orders;
  std::uint32_t delay_seed = 0;            // nonzero: seeded random delays before waits
};

class Team {
 public:
  Team(int ranks, Options options = {}) : ranks_(ranks), options_(std::move(options)) {
    validate();
    layout_ = kernel::with_p2p_region(kernel::make_layout(options_.staging_bytes, options_.ll_bytes, options_.fifo_slot_bytes,
                                                          options_.fifo_depth, options_.blocks),
                                      ranks_, options_.blocks);
    for (int r = 0; r < ranks_; ++r) {
      memory_.push_back(std::make_unique<RankMemory>(layout_.total_bytes()));
    }
    if (options_.ring_orders.empty()) options_.ring_orders = identity_ring_orders(ranks_);
  }

  int size() const { return ranks_; }
  const kernel::ScratchLayout& layout() const { return layout_; }
  const Options& options() const { return options_; }

  // Rank `rank`'s communicator on this team, and calls for several ranks from one thread (twin_comm.hpp).
  // The team must stay in place while views are in use.
  RankComm comm(int rank);
  template <class Fn>
  void group(Fn&& fn);

  // Every rank's all_reduce at once, as one cooperative launch runs virtual ranks on one GPU. Ranks whose
  // `takes_part` entry is false do not run (a rank that skipped the call): the others time out. Throws
  // chorus::Error(timeout) naming the first rank's record: who waited for whom, at which step.
  template <class T>
  void all_reduce(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op,
                  kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part = {}) {
    run<T>("cuda::twin::Team::all_reduce", Collective::all_reduce, inputs, outputs, count, op, 0, algorithm, takes_part);
  }

  // The other collectives, with NCCL's meaning of `count` and of the buffers (core/collective.hpp):
  // broadcast reads the root's input only (the others' may be null), reduce writes the root's output only.
  // Algorithms: one_shot (barrier pull through staging) for all; ring for all_gather and reduce_scatter, and
  // the pipelined chain along the ring order for broadcast and reduce.
  template <class T>
  void broadcast(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, int root,
                 kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part = {}) {
    run<T>("cuda::twin::Team::broadcast", Collective::broadcast, inputs, outputs, count, ReduceOp::sum, root, algorithm,
           takes_part);
  }
  template <class T>
  void reduce(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count, ReduceOp op, int root,
              kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part = {}) {
    run<T>("cuda::twin::Team::reduce", Collective::reduce, inputs, outputs, count, op, root, algorithm, takes_part);
  }
  template <class T>
  void all_gather(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t send_count,
                  kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part = {}) {
    run<T>("cuda::twin::Team::all_gather", Collective::all_gather, inputs, outputs, send_count, ReduceOp::sum, 0, algorithm,
           takes_part);
  }
  template <class T>
  void reduce_scatter(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t recv_count, ReduceOp op,
                      kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part = {}) {
    run<T>("cuda::twin::Team::reduce_scatter", Collective::reduce_scatter, inputs, outputs, recv_count, op, 0, algorithm,
           takes_part);
  }
  template <class T>
  void all_to_all(const std::vector<const T*>& inputs, const std::vector<T*>& outputs, std::size_t count_per_peer,
                  kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part = {}) {
    run<T>("cuda::twin::Team::all_to_all", Collective::all_to_all, inputs, outputs, count_per_peer, ReduceOp::sum, 0, algorithm,
           takes_part);
  }

  // Point-to-point transfers, all at once in one launch (cuda/transfer.hpp): a rank may send and receive
  // several. Transfers between the same ordered pair run in list order; from == to is a local copy.
  // Ranks in no transfer, and ranks whose `takes_part` entry is false, do not run (their peers time out:
  // chorus::Error(timeout) naming who waited for whom). Bad input is refused before anything runs
  // (transfer_plan.hpp).
  template <class T>
  void transfer(const std::vector<Transfer<T>>& transfers, const std::vector<bool>& takes_part = {}) {
    const char* name = "cuda::twin::Team::transfer";
    check_call(name, takes_part);
    const std::vector<kernel::P2pTable> tables = plan_transfers(name, ranks_, transfers);
    run_blocks(name, "p2p", [&](int rank) {
      const kernel::P2pTable& table = tables[static_cast<std::size_t>(rank)];
      const bool listed = table.send_count + table.recv_count > 0;
      return listed && (takes_part.empty() || takes_part[static_cast<std::size_t>(rank)]);
    }, [&](const HostBlock& block, const kernel::RankView& view) {
      kernel::p2p<T>(block, view, tables[static_cast<std::size_t>(view.rank)]);
    });
  }

  // The counters of rank r's block b.
  const kernel::BlockCounters& counters(int rank, int block) const {
    return memory_.at(static_cast<std::size_t>(rank))->state.block[block];
  }
  // The tree all_reduce's counters of rank r's block b.
  const kernel::TreeCounters& tree_counters(int rank, int block) const {
    return memory_.at(static_cast<std::size_t>(rank))->state.tree[block];
  }

  // Rank r's scratch (layout() says where each protocol's region is): tests plant stale data in it.
  unsigned char* scratch(int rank) { return memory_.at(static_cast<std::size_t>(rank))->scratch; }

  // The p2p counters of rank r's block b.
  const kernel::P2pCounters& p2p_counters(int rank, int block) const {
    return memory_.at(static_cast<std::size_t>(rank))->state.p2p[block];
  }

  // Puts every counter and every signal where `value` barriers, LL calls and FIFO steps would have left
  // them, consistently on all ranks: how the tests reach the 32-bit wrap without 2^32 calls. Every field
  // of Signals and RankState is a uint32 counter or flag, so each struct is filled word by word through
  // memcpy. (A loop over the fields, one per protocol, had no effect in a g++ 12.2 -O2 build, with
  // -fno-tree-vectorize it did; the cause was not pinned down. The wrap tests then ran far from the wrap,
  // so they now check that the counters are there.)
  void advance_counters_to(std::uint32_t value) {
    for (auto& memory : memory_) {
      fill_words(memory->signals, value);
      fill_words(memory->state, value);
    }
  }

 private:
  template <class Words>
  static void fill_words(Words& target, std::uint32_t value) {
    static_assert(std::is_trivially_copyable<Words>::value && sizeof(Words) % sizeof(std::uint32_t) == 0,
                  "a struct of uint32 counters");
    const std::vector<std::uint32_t> words(sizeof(Words) / sizeof(std::uint32_t), value);
    std::memcpy(&target, words.data(), sizeof(Words));
  }

  struct RankMemory {
    explicit RankMemory(std::size_t bytes)
        : scratch(static_cast<unsigned char*>(std::aligned_alloc(256, bytes == 0 ? 256 : bytes))) {
      if (scratch == nullptr) throw Error(ErrorCode::invalid_argument, "chorus::cuda::twin::Team: out of memory for scratch");
      std::memset(scratch, 0, bytes);
      std::memset(&signals, 0, sizeof(signals));
      std::memset(&state, 0, sizeof(state));
      std::memset(&timeout, 0, sizeof(timeout));
    }
    ~RankMemory() { std::free(scratch); }
    RankMemory(const RankMemory&) = delete;
    RankMemory& operator=(const RankMemory&) = delete;
    unsigned char* scratch;
    kernel::Signals signals;
    kernel::RankState state;
    kernel::TimeoutRecord timeout;
  };

  template <class T>
  void run(const char* name, Collective collective, const std::vector<const T*>& inputs, const std::vector<T*>& outputs,
           std::size_t count, ReduceOp op, int root, kernel::KernelAlgorithm algorithm, const std::vector<bool>& takes_part) {
    check_call(name, takes_part);
    check_team_call(TeamCallShape{name, collective, algorithm, ranks_, count, sizeof(T), root},
                    std::vector<const void*>(inputs.begin(), inputs.end()), std::vector<void*>(outputs.begin(), outputs.end()));
    run_blocks(name, kernel::to_string(algorithm),
               [&](int rank) { return takes_part.empty() || takes_part[static_cast<std::size_t>(rank)]; },
               [&](const HostBlock& block, const kernel::RankView& view) {
                 const auto i = static_cast<std::size_t>(view.rank);
                 kernel::collective(block, view, kernel::CollectiveCall<T>{collective, inputs[i], outputs[i], count, op, root}, algorithm);
               });
  }

  void check_call(const char* name, const std::vector<bool>& takes_part) const {
    if (broken_) throw Error(ErrorCode::peer_failed, detail::concat("chorus::", name, ": an earlier call timed out; make a new Team"));
    if (takes_part.size() != 0 && takes_part.size() != static_cast<std::size_t>(ranks_)) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", name, ": takes_part must be empty or one per rank, got ",
                                                               takes_part.size()));
    }
  }

  // Runs body(block, view) on every lane of every block of each rank for which runs(rank) holds, all at
  // once as one cooperative launch of virtual ranks, then raises the first rank's timeout record as
  // chorus::Error(timeout), `label` naming the kernel.
  template <class Runs, class Body>
  void run_blocks(const char* name, const char* label, const Runs& runs, const Body& body) {
    const auto timeout = std::chrono::milliseconds(env::timeout_ms());
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    BlockThreads launch;
    for (int r = 0; r < ranks_; ++r) {
      if (runs(r)) launch.start_body(view_of(r, timeout), options_.lanes, deadline, body);
    }
    launch.join();
    for (int r = 0; r < ranks_; ++r) {
      const kernel::TimeoutRecord& record = memory_[static_cast<std::size_t>(r)]->timeout;
      if (!timed_out(record)) continue;
      broken_ = true;
      throw timeout_error(record, name, label, timeout.count());
    }
  }

  kernel::RankView view_of(int rank, std::chrono::milliseconds timeout) const {
    kernel::RankView view{};
    view.rank = rank;
    view.nranks = ranks_;
    view.blocks = options_.blocks;
    view.layout = layout_;
    for (int r = 0; r < ranks_; ++r) {
      view.scratch[r] = memory_[static_cast<std::size_t>(r)]->scratch;
      view.signals[r] = &memory_[static_cast<std::size_t>(r)]->signals;
    }
    fill_rings(view, options_.ring_orders);
    view.state = &memory_[static_cast<std::size_t>(rank)]->state;
    view.timeout = &memory_[static_cast<std::size_t>(rank)]->timeout;
    view.timeout_ns = static_cast<std::uint64_t>(timeout.count()) * 1000000u;
    view.delay_seed = options_.delay_seed;
    return view;
  }

  void validate() const {
    const char* call = "cuda::twin::Team";
    if (ranks_ < 1 || ranks_ > kernel::kMaxRanks) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ranks must be 1..", kernel::kMaxRanks, ", got ", ranks_));
    }
    if (options_.blocks < 1 || options_.blocks > kernel::kMaxBlocks) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": blocks must be 1..", kernel::kMaxBlocks, ", got ", options_.blocks));
    }
    if (options_.lanes < 1 || options_.lanes > 64) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": lanes must be 1..64, got ", options_.lanes));
    }
    check_crossovers(options_.crossovers, call);
    // With one slot every rank would hold its full outgoing slot while waiting for the next rank, which
    // waits the same way: a cycle. Two slots let each step's send go out while the last is still read.
    if (!kernel::valid_fifo_depth(options_.fifo_depth) || options_.fifo_slot_bytes < kernel::kPackBytes) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": the FIFO needs a power-of-two number of slots, at least 2, of 16 bytes or more, got ",
                                                               options_.fifo_depth, " of ", options_.fifo_slot_bytes));
    }
    // The largest element (8 bytes) must leave two-shot a non-empty round and LL a line per source.
    if (kernel::two_shot_round_elements(kernel::segment_elements(options_.staging_bytes, options_.blocks, 8), ranks_,
                                        options_.blocks, 2) == 0) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": staging_bytes ", options_.staging_bytes,
                                                               " is too small for ", ranks_, " ranks x ", options_.blocks, " blocks"));
    }
    if (kernel::ll_capacity_lines(options_.ll_bytes, ranks_) < 2) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ll_bytes ", options_.ll_bytes, " is too small for ",
                                                               ranks_, " ranks"));
    }
    if (!options_.ring_orders.empty()) check_ring_orders(call, options_.ring_orders, ranks_);
  }

  int ranks_;
  Options options_;
  kernel::ScratchLayout layout_{};
  std::vector<std::unique_ptr<RankMemory>> memory_;
  bool broken_ = false;
  // A RankComm of this team, made by the first comm(). It points at this Team object, so a moved team
  // starts without one (views made before a move must not be used after it; new ones are made on demand).
  struct CommState {
    CommState() = default;
    CommState(CommState&&) noexcept {}
    CommState& operator=(CommState&&) noexcept {
      state.reset();
      return *this;
    }
    explicit operator bool() const { return state != nullptr; }
    std::shared_ptr<void> state;
  } comm_state_;
};

}  // namespace chorus::cuda::twin

#include "twin_comm.hpp"
