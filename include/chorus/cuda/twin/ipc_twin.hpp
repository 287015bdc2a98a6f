// The CPU twin of the multi-process CUDA communicator (cuda/ipc_comm.cuh): one rank per host thread (or
// per anything with a chorus host communicator), each with its OWN memory, finding its peers' memory through
// the same bootstrap (cuda/ipc_bootstrap.hpp), and each running ONLY ITS OWN blocks of the kernel bodies,
// as a process launches only its own kernel. What stands in for the CUDA driver is an IpcRegistry: a
// "handle" names an allocation of another rank in this process, and opening it is counted, so a test can
// check that every open was closed.
//
//   chorus::cuda::twin::IpcRegistry registry;             // shared by the ranks, as the driver is
//   host_team.run([&](chorus::host::Comm& host) {
//     auto rank = chorus::cuda::twin::IpcRank<>::create(host, registry, {});
//     rank.all_reduce(send, recv, count, ReduceOp::sum, kernel::KernelAlgorithm::ring);  // a chosen kernel
//     rank.all_reduce(send, recv, count, ReduceOp::sum);                                  // the contract's forms
//     rank.group([&] { rank.send(out, n, next); rank.recv(in, n, prev); });              // both in one launch
//     auto half = rank.split(rank.rank() % 2, rank.rank());
//   });
//
// IpcRank is a full communicator (is_communicator_v): the contract's forms come from cuda/ipc_calls.hpp,
// send/recv from cuda/ipc_p2p.hpp, split from cuda/ipc_split.hpp, each shared with cuda::IpcComm; the
// twin has no streams, so every call returns when this rank's blocks are done.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../collective_check.hpp"
#include "../ipc_bootstrap.hpp"
#include "../ipc_calls.hpp"
#include "../ipc_p2p.hpp"
#include "../ipc_split.hpp"
#include "../kernel/p2p.hpp"
#include "../timeout_error.hpp"
#include "../device/twin_ipc_registry.hpp"
#include "block_threads.hpp"

namespace chorus::cuda::twin {

// The MemoryOpener of the bootstrap, over a registry.
struct RegistryOpener {
  IpcRegistry* registry;
  void* open(const IpcHandle& handle, int peer) const { return registry->open(handle, peer); }
  void close(void* pointer) const noexcept { registry->close(pointer); }
  void publish(const kernel::RankView&) const {}  // the twin's blocks read the view where it is
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
class IpcRank : public IpcCalls<IpcRank<Opener>> {
 public:
  using IpcCalls<IpcRank<Opener>>::all_reduce;

  IpcRank() = default;  // a null communicator (what split with a negative colour returns)

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
    return bootstrap(host, registry, std::move(options), std::move(opener), call, rank, rank, n, blocks);
  }
  template <class HostComm>
  static IpcRank create(HostComm& host, IpcRegistry& registry, IpcOptions options = {}) {
    return create(host, registry, std::move(options), Opener{&registry});
  }

  IpcRank(IpcRank&&) noexcept = default;
  IpcRank& operator=(IpcRank&& other) noexcept {
    if (this != &other) {
      peers_.reset();  // close the peers' memory before this rank's own is freed
      memory_ = std::move(other.memory_);
      peers_ = std::move(other.peers_);
      registry_ = other.registry_;
      options_ = std::move(other.options_);
      opener_ = std::move(other.opener_);
      broken_ = other.broken_;
      grouping_ = false;
    }
    return *this;
  }

  int rank() const { return memory_ ? peers_->view().rank : -1; }
  int size() const { return memory_ ? peers_->view().nranks : 0; }
  explicit operator bool() const { return memory_ != nullptr; }
  int blocks() const { return live("cuda::twin::IpcRank::blocks").blocks; }
  const kernel::RankView& view() const { return live("cuda::twin::IpcRank::view"); }

  // This rank's part of a collective with a chosen kernel: its own blocks only. Returns when they finish,
  // i.e. when this rank's part is done; a peer that never makes the call shows up as a timeout
  // (chorus::Error), after which the rank refuses further calls.
  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, kernel::KernelAlgorithm algorithm) {
    collective<T>(Collective::all_reduce, send, recv, count, op, 0, algorithm);
  }
  template <class T>
  void collective(Collective collective, const T* send, T* recv, std::size_t count, ReduceOp op, int root,
                  kernel::KernelAlgorithm algorithm) {
    const char* call = call_name(collective);
    ready(call, false);
    check_rank_call(TeamCallShape{call, collective, algorithm, size(), count, sizeof(T), root}, rank(), send, recv);
    run_blocks(call, kernel::to_string(algorithm), [c = kernel::CollectiveCall<T>{collective, send, recv, count, op, root},
                                                    algorithm](const HostBlock& block, const kernel::RankView& own) {
      kernel::collective(block, own, c, algorithm);
    });
  }

  // The contract's collectives (ipc_calls.hpp: T from the call, or from args.type for the type-erased forms):
  // the Algorithm picks the kernel as cuda::IpcComm does.
  template <class T>
  void run_collective(const runtime::CollectiveArgs& args) {
    const char* call = call_name(args.collective);
    ready(call, false);
    runtime::check_type(call, rank(), args.type);
    runtime::check_op(call, rank(), args.op);
    const kernel::KernelAlgorithm algorithm =
        ipc_kernel_of(call, rank(), args.collective, args.algorithm, args.count * size_of(args.type), size());
    collective<T>(args.collective, static_cast<const T*>(args.send), static_cast<T*>(args.recv), args.count, args.op, args.root,
                  algorithm);
  }

  // send/recv (ipc_p2p.hpp): one p2p launch of this rank's blocks, or queued inside group().
  void run_transfer(const IpcPeerCall& c) {
    const char* call = c.sending ? "cuda::twin::IpcRank::send" : "cuda::twin::IpcRank::recv";
    ready(call, true);
    if (grouping_) return add_ipc_transfer(group_, c, call, rank(), size());
    kernel::P2pTable table{};
    add_ipc_transfer(table, c, call, rank(), size());
    run_p2p(call, table);
  }

  // The sends and receives fn makes run in one launch at its end, so a rank can send to one peer while it
  // receives from another (a ring exchange) whatever their sizes. Only send and recv inside.
  template <class Fn>
  void group(Fn&& fn) {
    const char* call = "cuda::twin::IpcRank::group";
    ready(call, false);
    group_ = kernel::P2pTable{};
    grouping_ = true;
    try {
      fn();
    } catch (...) {
      grouping_ = false;
      throw;
    }
    grouping_ = false;
    if (group_.send_count + group_.recv_count > 0) run_p2p(call, group_);
  }

  void wait() {}

  // A one-int all_reduce through this rank's blocks: it returns once every rank has reached it.
  void barrier() {
    ready("cuda::twin::IpcRank::barrier", false);
    int flag = 0;
    collective<int>(Collective::all_reduce, &flag, &flag, 1, ReduceOp::sum, 0, kernel_for(Algorithm::automatic, sizeof(int), size()));
  }

  // Collective over this communicator (ipc_split.hpp): members of a colour ordered by (key, rank) get a new
  // communicator with its own memory, handles exchanged through this one's kernels; colour < 0 gets a null
  // one. Same options and blocks as this one. Throws on every rank if any rank fails.
  IpcRank split(int color, int key) {
    const char* call = "cuda::twin::IpcRank::split";
    ready(call, false);
    const IpcSplitPlan plan = plan_ipc_split(exchange_split_entries(*this, color, key), rank());
    IpcSplitChannel<IpcRank> channel(*this, plan);
    if (plan.members.empty()) {
      channel.stand_aside(call, rank());
      return IpcRank();
    }
    return bootstrap(channel, *registry_, options_, opener_, call, rank(), plan.rank, static_cast<int>(plan.members.size()), blocks());
  }

  // The split's exchanges (ipc_split.hpp), through this rank's own all_gather and all_reduce.
  std::vector<unsigned char> gather_for_split(const void* mine, std::size_t bytes) {
    std::vector<unsigned char> all(bytes * static_cast<std::size_t>(size()));
    unsigned char* slot = all.data() + bytes * static_cast<std::size_t>(rank());
    std::memcpy(slot, mine, bytes);
    collective<unsigned char>(Collective::all_gather, slot, all.data(), bytes, ReduceOp::sum, 0,
                              kernel_for(Collective::all_gather, Algorithm::automatic, bytes));
    return all;
  }
  int first_failed_for_split(bool failed) {
    std::int32_t lowest = failed ? rank() : size();
    collective<std::int32_t>(Collective::all_reduce, &lowest, &lowest, 1, ReduceOp::min, 0,
                             kernel_for(Algorithm::automatic, sizeof(lowest), size()));
    return lowest < size() ? lowest : -1;
  }

 private:
  static const char* call_name(Collective collective) {
    static const char* const names[kCollectiveCount] = {"cuda::twin::IpcRank::all_reduce", "cuda::twin::IpcRank::reduce_scatter",
                                                        "cuda::twin::IpcRank::all_gather", "cuda::twin::IpcRank::broadcast",
                                                        "cuda::twin::IpcRank::reduce", "cuda::twin::IpcRank::all_to_all"};
    return names[static_cast<int>(collective)];
  }

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

  // Exchange 2 of create, and both of split's members: allocate this rank's memory (rank `rank` of `n`),
  // exchange the records over `link`, open the peers'. `caller`: this rank as errors name it before the
  // new communicator exists (create: its rank; split: its parent rank).
  template <class Link>
  static IpcRank bootstrap(Link& link, IpcRegistry& registry, IpcOptions options, Opener opener, const char* call, int caller, int rank,
                           int n, int blocks) {
    std::exception_ptr failure;
    IpcRecord mine = make_ipc_record(IpcStage::memory, rank, n, options.bus_id.c_str(), blocks);
    mine.layout = kernel::with_p2p_region(
        kernel::make_layout(options.staging_bytes, options.ll_bytes, options.fifo_slot_bytes, options.fifo_depth, blocks), n, blocks);
    std::unique_ptr<Memory> memory;
    try {
      check_sizes(options, call, caller, n, blocks);
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
      IpcPeerMemory<Opener> peers(link, mine, local, opener, call);
      return IpcRank(std::move(memory), std::move(peers), registry, std::move(options), std::move(opener));
    } catch (...) {
      if (failure) std::rethrow_exception(failure);
      throw;
    }
  }

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

  IpcRank(std::unique_ptr<Memory> memory, IpcPeerMemory<Opener> peers, IpcRegistry& registry, IpcOptions options, Opener opener)
      : memory_(std::move(memory)),
        peers_(std::move(peers)),
        registry_(&registry),
        options_(std::move(options)),
        opener_(std::move(opener)) {}

  // The view, or chorus::Error on a null or moved-from communicator (no rank to name).
  const kernel::RankView& live(const char* call) const {
    check_ipc_live(call, memory_ != nullptr);
    return peers_->view();
  }
  // Before any call: a live communicator, not broken by a timeout, and only send/recv inside group().
  void ready(const char* call, bool may_group) const {
    live(call);
    if (broken_) throw make_error(ErrorCode::peer_failed, call, rank(), "an earlier call timed out; make a new communicator");
    if (grouping_ && !may_group) {
      throw make_error(ErrorCode::unsupported, call, rank(), "only send and recv may be called inside group()");
    }
  }

  void run_p2p(const char* call, const kernel::P2pTable& table) {
    run_blocks(call, "p2p", [table](const HostBlock& block, const kernel::RankView& own) { kernel::p2p<std::uint8_t>(block, own, table); });
  }

  // Runs body(block, view) on this rank's blocks (one twin launch), then raises a timeout record as
  // chorus::Error(timeout), `label` naming the kernel; the rank refuses further calls after one.
  template <class Body>
  void run_blocks(const char* call, const char* label, const Body& body) {
    const long long timeout_ms = env::timeout_ms();
    BlockThreads launch;
    launch.start_body(view(), options_.lanes, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms), body);
    launch.join();
    if (timed_out(memory_->timeout)) {
      broken_ = true;
      throw timeout_error(memory_->timeout, call, label, timeout_ms);
    }
  }

  std::unique_ptr<Memory> memory_;  // declared first: freed after the peers' memory is closed
  std::optional<IpcPeerMemory<Opener>> peers_;
  IpcRegistry* registry_ = nullptr;
  IpcOptions options_{};
  Opener opener_{};
  bool broken_ = false;
  bool grouping_ = false;
  kernel::P2pTable group_{};
};

}  // namespace chorus::cuda::twin
