// The CPU twin of chorus's CUDA collective kernels: n ranks whose scratch, signals and counters are host
// memory, and whose blocks and lanes are threads (ranks x blocks x lanes of them), running the very kernel
// bodies the GPU runs (cuda/kernel/). It is how the kernels are proven where no GPU exists, under
// AddressSanitizer and ThreadSanitizer, and a way to watch a GPU algorithm on a laptop.
//
//   chorus::cuda::twin::Team team(4, {/*blocks*/ 2, /*lanes*/ 4});
//   team.all_reduce(inputs, outputs, count, ReduceOp::sum, kernel::KernelAlgorithm::ring);  // all ranks at once
//   team.all_gather(inputs, outputs, send_count, kernel::KernelAlgorithm::one_shot);        // and the others
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../collective_check.hpp"
#include "../kernel/collective.hpp"
#include "block_threads.hpp"
#include "host_block.hpp"

namespace chorus::cuda::twin {

struct Options {
  int blocks = 2;                          // blocks (channels) per rank
  int lanes = 4;                           // threads per block
  std::size_t staging_bytes = 64 * 1024;   // one-shot / two-shot staging (and two-shot results) per rank
  std::size_t ll_bytes = 16 * 1024;        // LL lines per rank
  std::size_t fifo_slot_bytes = 4 * 1024;  // Simple FIFO slot
  int fifo_depth = 4;                      // Simple FIFO slots per block
  std::vector<int> ring_order;             // ring position -> rank; empty: 0, 1, ..., n-1
  std::uint32_t delay_seed = 0;            // nonzero: seeded random delays before waits
};

class Team {
 public:
  Team(int ranks, Options options = {}) : ranks_(ranks), options_(std::move(options)) {
    validate();
    layout_ = kernel::make_layout(options_.staging_bytes, options_.ll_bytes, options_.fifo_slot_bytes,
                                  options_.fifo_depth, options_.blocks);
    for (int r = 0; r < ranks_; ++r) {
      memory_.push_back(std::make_unique<RankMemory>(layout_.total_bytes()));
    }
    if (options_.ring_order.empty()) {
      options_.ring_order.resize(static_cast<std::size_t>(ranks_));
      std::iota(options_.ring_order.begin(), options_.ring_order.end(), 0);
    }
  }

  int size() const { return ranks_; }
  const kernel::ScratchLayout& layout() const { return layout_; }

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
  // Algorithms: one_shot (barrier pull through staging) for all; ring for all_gather and reduce_scatter.
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

  // The counters of rank r's block b.
  const kernel::BlockCounters& counters(int rank, int block) const {
    return memory_.at(static_cast<std::size_t>(rank))->state.block[block];
  }

  // Puts every counter and every signal where `value` barriers, LL calls and FIFO steps would have left
  // them, consistently on all ranks: how the tests reach the 32-bit wrap without 2^32 calls.
  void advance_counters_to(std::uint32_t value) {
    for (auto& memory : memory_) {
      for (int b = 0; b < kernel::kMaxBlocks; ++b) {
        memory->state.block[b] = kernel::BlockCounters{value, value, value, value};
        for (int peer = 0; peer < kernel::kMaxRanks; ++peer) {
          memory->signals.start[b][peer] = value;
          memory->signals.end[b][peer] = value;
        }
        memory->signals.fifo_head[b] = value;
        memory->signals.fifo_tail[b] = value;
      }
    }
  }

 private:
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
    if (broken_) throw Error(ErrorCode::peer_failed, detail::concat("chorus::", name, ": an earlier call timed out; make a new Team"));
    if (takes_part.size() != 0 && takes_part.size() != static_cast<std::size_t>(ranks_)) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", name, ": takes_part must be empty or one per rank, got ",
                                                               takes_part.size()));
    }
    check_team_call(TeamCallShape{name, collective, algorithm, ranks_, count, sizeof(T), root},
                    std::vector<const void*>(inputs.begin(), inputs.end()), std::vector<void*>(outputs.begin(), outputs.end()));
    const auto timeout = std::chrono::milliseconds(env::timeout_ms());
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<kernel::RankView> views;
    for (int r = 0; r < ranks_; ++r) views.push_back(view_of(r, timeout));
    BlockThreads launch;  // every rank's blocks at once, as one cooperative launch of virtual ranks
    for (int r = 0; r < ranks_; ++r) {
      if (!takes_part.empty() && !takes_part[static_cast<std::size_t>(r)]) continue;
      const auto i = static_cast<std::size_t>(r);
      launch.start(views[i], kernel::CollectiveCall<T>{collective, inputs[i], outputs[i], count, op, root}, algorithm,
                   options_.lanes, deadline);
    }
    launch.join();
    for (int r = 0; r < ranks_; ++r) {
      kernel::TimeoutRecord& record = memory_[static_cast<std::size_t>(r)]->timeout;
      if (__atomic_load_n(&record.timed_out, __ATOMIC_ACQUIRE) == 0) continue;
      const kernel::TimeoutRecord seen = record;
      broken_ = true;
      throw make_error(ErrorCode::timeout, name, seen.rank, kernel::to_string(algorithm), " block ", seen.block, " waited ",
                       timeout.count(), " ms for rank ", seen.peer, " (", kernel::to_string(static_cast<kernel::WaitKind>(seen.wait)),
                       ", step ", seen.step, "): expected ", seen.expected, ", saw ", seen.seen);
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
    const auto& order = options_.ring_order;
    for (int p = 0; p < ranks_; ++p) {
      if (order[static_cast<std::size_t>(p)] != rank) continue;
      view.ring_position = p;
      view.ring_next = order[static_cast<std::size_t>((p + 1) % ranks_)];
      view.ring_prev = order[static_cast<std::size_t>((p + ranks_ - 1) % ranks_)];
    }
    for (int p = 0; p < ranks_; ++p) view.ring_order[p] = order[static_cast<std::size_t>(p)];
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
    // With one slot every rank would hold its full outgoing slot while waiting for the next rank, which
    // waits the same way: a cycle. Two slots let each step's send go out while the last is still read.
    if (options_.fifo_depth < 2 || options_.fifo_slot_bytes < kernel::kPackBytes) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": the FIFO needs at least 2 slots of 16 bytes, got ",
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
    if (!options_.ring_order.empty()) {
      std::vector<bool> seen(static_cast<std::size_t>(ranks_), false);
      bool ok = options_.ring_order.size() == static_cast<std::size_t>(ranks_);
      for (int r : options_.ring_order) {
        ok = ok && r >= 0 && r < ranks_ && !seen[static_cast<std::size_t>(r)];
        if (ok) seen[static_cast<std::size_t>(r)] = true;
      }
      if (!ok) throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ring_order must be a permutation of 0..", ranks_ - 1));
    }
  }

  int ranks_;
  Options options_;
  kernel::ScratchLayout layout_{};
  std::vector<std::unique_ptr<RankMemory>> memory_;
  bool broken_ = false;
};

}  // namespace chorus::cuda::twin
