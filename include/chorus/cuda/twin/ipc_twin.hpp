// The CPU twin of the multi-process CUDA communicator (cuda/ipc_comm.cuh): one rank per host thread (or
// per anything with a chorus host communicator), each with its OWN memory, finding its peers' memory through
// the same bootstrap (cuda/ipc_bootstrap.hpp), and each running ONLY ITS OWN blocks of the kernel bodies,
// as a process launches only its own kernel. What stands in for the CUDA driver is an IpcRegistry: a
// "handle" names an allocation of another rank in this process, and opening it is counted, so a test can
// check that every open was closed.
//
//   chorus::cuda::twin::IpcRegistry registry;             // shared by the ranks, as the driver is
//   host_team.run([&](chorus::host::Comm& host) {
//     auto rank = chorus::cuda::twin::IpcRank::create(host, registry, {});
//     rank.all_reduce(send, recv, count, ReduceOp::sum, kernel::KernelAlgorithm::ring);
//   });
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../collective_check.hpp"
#include "../ipc_bootstrap.hpp"
#include "../timeout_error.hpp"
#include "block_threads.hpp"

namespace chorus::cuda::twin {

// The twin's driver: exports allocations as handles and opens them again, counting opens.
class IpcRegistry {
 public:
  IpcHandle export_memory(void* pointer) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t id = ++last_id_;
    exported_[id] = pointer;
    IpcHandle handle{};
    std::memcpy(handle.bytes, kTag, sizeof(kTag));
    std::memcpy(handle.bytes + sizeof(kTag), &id, sizeof(id));
    return handle;
  }
  void unexport(void* pointer) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = exported_.begin(); it != exported_.end(); ++it) {
      if (it->second == pointer) {
        exported_.erase(it);
        return;
      }
    }
  }

  // As cudaIpcOpenMemHandle: fails for a handle that names nothing exported.
  void* open(const IpcHandle& handle, int peer) {
    std::uint64_t id = 0;
    std::memcpy(&id, handle.bytes + sizeof(kTag), sizeof(id));
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = exported_.find(id);
    if (std::memcmp(handle.bytes, kTag, sizeof(kTag)) != 0 || it == exported_.end()) {
      throw make_error(ErrorCode::invalid_argument, "cuda::twin::IpcRegistry::open", peer, "its handle names no exported memory");
    }
    ++open_[it->second];
    return it->second;
  }
  void close(void* pointer) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = open_.find(pointer);
    if (it != open_.end() && --it->second == 0) open_.erase(it);
  }

  // Opens not yet closed, over all allocations.
  int open_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int count = 0;
    for (const auto& entry : open_) count += entry.second;
    return count;
  }

 private:
  static constexpr unsigned char kTag[8] = {'c', 'h', 'o', 'r', 'u', 's', 't', 'w'};
  mutable std::mutex mutex_;
  std::uint64_t last_id_ = 0;
  std::map<std::uint64_t, void*> exported_;
  std::map<void*, int> open_;
};

// The MemoryOpener of the bootstrap, over a registry.
struct RegistryOpener {
  IpcRegistry* registry;
  void* open(const IpcHandle& handle, int peer) const { return registry->open(handle, peer); }
  void close(void* pointer) const noexcept { registry->close(pointer); }
};

struct IpcOptions {
  int blocks = 2;                          // the most this rank "keeps resident": the ranks use the minimum
  int lanes = 4;                           // threads per block
  std::size_t staging_bytes = 64 * 1024;   // as twin::Options
  std::size_t ll_bytes = 16 * 1024;
  std::size_t fifo_slot_bytes = 4 * 1024;
  int fifo_depth = 4;
  std::string bus_id;                      // empty: "twin:<rank>" (one "GPU" per rank)
  std::uint32_t delay_seed = 0;
};

template <class Opener = RegistryOpener>
class IpcRank {
 public:
  // Collective over `host`: every rank calls it. Throws chorus::Error on every rank if any rank fails.
  template <class HostComm>
  static IpcRank create(HostComm& host, IpcRegistry& registry, IpcOptions options, Opener opener) {
    const char* call = "cuda::twin::IpcRank::create";
    const int rank = host.rank();
    const int n = host.size();
    if (options.bus_id.empty()) options.bus_id = "twin:" + std::to_string(rank);
    // A rank whose own part fails still takes part in both exchanges (its record marked failed), so its
    // peers are released with an Error instead of waiting for it; it then throws its own error.
    std::exception_ptr failure = check_options(options, call, rank);
    IpcRecord hello = make_ipc_record(IpcStage::hello, rank, n, options.bus_id.c_str(), options.blocks);
    hello.failed = failure ? 1 : 0;
    int blocks = 0;
    try {
      blocks = ipc_agree_blocks(host, hello, call);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
    IpcRecord mine = make_ipc_record(IpcStage::memory, rank, n, options.bus_id.c_str(), blocks);
    mine.layout = kernel::with_p2p_region(
        kernel::make_layout(options.staging_bytes, options.ll_bytes, options.fifo_slot_bytes, options.fifo_depth, blocks), n, blocks);
    std::unique_ptr<Memory> memory;
    try {
      check_sizes(options, call, rank, n, blocks);
      memory = std::make_unique<Memory>(registry, mine.layout.total_bytes());
      mine.scratch = memory->scratch_handle;
      mine.signals = memory->signals_handle;
    } catch (...) {
      failure = std::current_exception();
      mine.failed = 1;
    }
    const auto timeout_ns = static_cast<std::uint64_t>(env::timeout_ms()) * 1000000u;
    const IpcLocalMemory local = memory ? IpcLocalMemory{memory->scratch, &memory->signals, &memory->state, &memory->timeout,
                                                         timeout_ns, options.delay_seed}
                                        : IpcLocalMemory{};
    try {
      IpcPeerMemory<Opener> peers(host, mine, local, std::move(opener), call);
      return IpcRank(std::move(memory), std::move(peers), options.lanes);
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
  }
  template <class HostComm>
  static IpcRank create(HostComm& host, IpcRegistry& registry, IpcOptions options = {}) {
    return create(host, registry, std::move(options), Opener{&registry});
  }

  int rank() const { return peers_.view().rank; }
  int size() const { return peers_.view().nranks; }
  int blocks() const { return peers_.view().blocks; }
  const kernel::RankView& view() const { return peers_.view(); }

  // This rank's part of a collective: its own blocks only. Returns when they finish, i.e. when this rank's
  // part is done; a peer that never makes the call shows up as a timeout (chorus::Error), after which the
  // rank refuses further calls.
  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, kernel::KernelAlgorithm algorithm) {
    collective<T>(Collective::all_reduce, send, recv, count, op, 0, algorithm);
  }
  template <class T>
  void collective(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
                  kernel::KernelAlgorithm algorithm) {
    static const char* const names[kCollectiveCount] = {"cuda::twin::IpcRank::all_reduce", "cuda::twin::IpcRank::reduce_scatter",
                                                        "cuda::twin::IpcRank::all_gather", "cuda::twin::IpcRank::broadcast",
                                                        "cuda::twin::IpcRank::reduce", "cuda::twin::IpcRank::all_to_all"};
    const char* call = names[static_cast<int>(collective)];
    if (broken_) throw make_error(ErrorCode::peer_failed, call, rank(), "an earlier call timed out; make a new communicator");
    check_rank_call(TeamCallShape{call, collective, algorithm, size(), count, sizeof(T), root}, rank(), send, recv);
    const long long timeout_ms = env::timeout_ms();
    BlockThreads launch;
    launch.start(view(), kernel::CollectiveCall<T>{collective, send, recv, count, op, root}, algorithm, lanes_,
                 std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms));
    launch.join();
    if (timed_out(memory_->timeout)) {
      broken_ = true;
      throw timeout_error(memory_->timeout, call, algorithm, timeout_ms);
    }
  }

 private:
  // This rank's allocations, exported to the registry (as cudaIpcGetMemHandle) until they are freed.
  struct Memory {
    Memory(IpcRegistry& registry_in, std::size_t bytes)
        : registry(&registry_in), scratch(static_cast<unsigned char*>(std::aligned_alloc(256, bytes == 0 ? 256 : bytes))) {
      if (scratch == nullptr) throw Error(ErrorCode::invalid_argument, "chorus::cuda::twin::IpcRank: out of memory for scratch");
      std::memset(scratch, 0, bytes);
      std::memset(&signals, 0, sizeof(signals));
      std::memset(&state, 0, sizeof(state));
      std::memset(&timeout, 0, sizeof(timeout));
      scratch_handle = registry->export_memory(scratch);
      signals_handle = registry->export_memory(&signals);
    }
    ~Memory() {
      registry->unexport(scratch);
      registry->unexport(&signals);
      std::free(scratch);
    }
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;
    IpcRegistry* registry;
    unsigned char* scratch;
    kernel::Signals signals;
    kernel::RankState state;
    kernel::TimeoutRecord timeout;
    IpcHandle scratch_handle;
    IpcHandle signals_handle;
  };

  static std::exception_ptr check_options(const IpcOptions& options, const char* call, int rank) {
    if (options.lanes < 1 || options.lanes > 64) {
      return std::make_exception_ptr(make_error(ErrorCode::invalid_argument, call, rank, "lanes must be 1..64, got ", options.lanes));
    }
    if (!kernel::valid_fifo_depth(options.fifo_depth) || options.fifo_slot_bytes < kernel::kPackBytes) {
      return std::make_exception_ptr(make_error(ErrorCode::invalid_argument, call, rank, "the FIFO needs a power-of-two number of slots, at least 2, of 16 bytes or more, got ",
                                                options.fifo_depth, " of ", options.fifo_slot_bytes));
    }
    return nullptr;
  }

  // As twin::Team checks them, with the agreed blocks.
  static void check_sizes(const IpcOptions& options, const char* call, int rank, int n, int blocks) {
    if (kernel::two_shot_round_elements(kernel::segment_elements(options.staging_bytes, blocks, 8), n, blocks, 2) == 0 ||
        kernel::ll_capacity_lines(options.ll_bytes, n) < 2) {
      throw make_error(ErrorCode::invalid_argument, call, rank, "staging_bytes ", options.staging_bytes, " or ll_bytes ",
                       options.ll_bytes, " too small for ", n, " ranks x ", blocks, " blocks");
    }
  }

  IpcRank(std::unique_ptr<Memory> memory, IpcPeerMemory<Opener> peers, int lanes)
      : memory_(std::move(memory)), peers_(std::move(peers)), lanes_(lanes) {}

  std::unique_ptr<Memory> memory_;  // declared first: freed after the peers' memory is closed
  IpcPeerMemory<Opener> peers_;
  int lanes_;
  bool broken_ = false;
};

}  // namespace chorus::cuda::twin
