// How the ranks of a multi-process CUDA communicator find each other's memory, over any host
// communicator (host::Comm, mpi::Comm: anything with is_communicator_v) or any other Channel (below; a
// split exchanges its records through the parent IpcComm's own kernels, cuda/ipc_split.hpp). Plain C++17:
// what turns a peer's handle into a pointer is a policy, so the same bootstrap runs on the GPU
// (cudaIpcOpenMemHandle) and on the CPU twin (its registry) alike: BasicIpcComm<Device>
// (cuda/basic_ipc_comm.hpp) opens through its Device, and the twin's tests prove it.
//
//   int blocks = ipc_agree_blocks(host, hello_record, call);          // exchange 1: check, agree on blocks
//   ... size the layout from `blocks`, allocate, export handles ...
//   IpcPeerMemory<Opener> peers(host, memory_record, local, opener, call);   // exchange 2: open every peer's
//   launch with peers.view();                                          // this rank's kernel::RankView
//
// A MemoryOpener is a small copyable policy:
//   void* open(const IpcHandle& handle, int peer);   // a pointer this process can use; throws chorus::Error
//   void close(void* pointer) noexcept;              // undoes one open
//   void publish(const kernel::RankView& view);      // hands the finished view to this rank's kernels (on a
//                                                    // GPU: copies it to device memory); may throw
// A Channel is what the exchanges run over (HostChannel wraps a host communicator):
//   int rank() const;                                       // this rank's position in the records
//   std::vector<IpcRecord> exchange(const IpcRecord& mine); // every rank's record, in rank order
//   int first_failed(bool failed);                          // the lowest failed rank, or -1; all call it
//   std::string rank_name(int rank) const;                  // how an error names that rank
//
// Nobody hangs: after its local checks (and after opening its peers' memory AND publishing the view, the
// last steps that can fail) every rank contributes a status word, so when one rank fails all of them throw,
// and every rank closes what it opened before it does. Nothing that can fail comes after that exchange.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "ipc_record.hpp"
#include "ring_orders.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// This rank's own memory, as its own kernel addresses it.
struct IpcLocalMemory {
  unsigned char* scratch;
  kernel::Signals* signals;
  kernel::RankState* state;
  kernel::TimeoutRecord* timeout;  // host-visible (on a GPU: the device address of mapped host memory)
  std::uint64_t timeout_ns;
  std::uint32_t delay_seed;
};

namespace ipc_detail {

// Every rank's record in rank order: the host communicator's all_gather of the records' bytes.
template <class HostComm>
std::vector<IpcRecord> exchange_records(HostComm& host, const IpcRecord& mine) {
  static_assert(is_communicator_v<HostComm>, "the IPC bootstrap runs over a chorus communicator");
  std::vector<IpcRecord> all(static_cast<std::size_t>(host.size()));
  host.all_gather(static_cast<const void*>(&mine), static_cast<void*>(all.data()), sizeof(IpcRecord), DataType::uint8);
  return all;
}

// The lowest rank that failed, or size() if none. Every rank must call it at the same point.
template <class HostComm>
int first_failed_rank(HostComm& host, bool failed) {
  const std::int32_t mine = failed ? host.rank() : host.size();
  std::int32_t lowest = 0;
  host.all_reduce(&mine, &lowest, 1, ReduceOp::min);
  return lowest;
}

// After the status exchange: this rank's own error if it has one, else peer_failed naming the rank that did.
template <class Channel>
void throw_if_any_failed(Channel& channel, const std::exception_ptr& own, const char* call, const char* what) {
  const int failed = channel.first_failed(own != nullptr);
  if (own) std::rethrow_exception(own);
  if (failed >= 0) {
    throw make_error(ErrorCode::peer_failed, call, channel.rank(), channel.rank_name(failed), " failed ", what,
                     " (its own error says why)");
  }
}

}  // namespace ipc_detail

// The bootstrap's Channel over a host communicator.
template <class HostComm>
class HostChannel {
 public:
  explicit HostChannel(HostComm& host) : host_(&host) {}
  int rank() const { return host_->rank(); }
  std::vector<IpcRecord> exchange(const IpcRecord& mine) { return ipc_detail::exchange_records(*host_, mine); }
  int first_failed(bool failed) {
    const int lowest = ipc_detail::first_failed_rank(*host_, failed);
    return lowest < host_->size() ? lowest : -1;
  }
  std::string rank_name(int rank) const { return "rank " + std::to_string(rank); }

 private:
  HostComm* host_;
};

// Exchange 1. `hello`: an IpcStage::hello record with this rank's most resident blocks. Returns the blocks
// every rank will use. Throws on every rank if any record is wrong.
template <class HostComm>
int ipc_agree_blocks(HostComm& host, const IpcRecord& hello, const char* call) {
  const std::vector<IpcRecord> records = ipc_detail::exchange_records(host, hello);
  std::exception_ptr error;
  try {
    validate_records(records, call);
  } catch (...) {
    error = std::current_exception();
  }
  HostChannel<HostComm> channel(host);
  ipc_detail::throw_if_any_failed(channel, error, call, "the hello exchange");
  return agreed_blocks(records);
}

// Exchange 2 and what it opens: every peer's scratch and signals mapped into this process, closed again
// when this object dies (or when the bootstrap fails part-way, on every rank). `link`: a host communicator
// or a Channel.
template <class Opener>
class IpcPeerMemory {
 public:
  template <class Link>
  IpcPeerMemory(Link& link, const IpcRecord& mine, const IpcLocalMemory& local, Opener opener, const char* call)
      : opener_(std::move(opener)) {
    if constexpr (is_communicator_v<Link>) {
      HostChannel<Link> channel(link);
      bootstrap(channel, mine, local, call);
    } else {
      bootstrap(link, mine, local, call);
    }
  }

  IpcPeerMemory(IpcPeerMemory&& other) noexcept
      : opener_(other.opener_), opened_(std::move(other.opened_)), view_(other.view_) {
    other.opened_.clear();
  }
  IpcPeerMemory& operator=(IpcPeerMemory&& other) noexcept {
    if (this != &other) {
      close_all();
      opener_ = other.opener_;
      opened_ = std::move(other.opened_);
      other.opened_.clear();
      view_ = other.view_;
    }
    return *this;
  }
  IpcPeerMemory(const IpcPeerMemory&) = delete;
  IpcPeerMemory& operator=(const IpcPeerMemory&) = delete;
  ~IpcPeerMemory() { close_all(); }

  const kernel::RankView& view() const { return view_; }
  // Forgets the mappings without closing them, for a teardown whose wait for this rank's kernel did not
  // end: unmapping memory a running kernel reads is worse than leaking the mapping.
  void keep_open() noexcept { opened_.clear(); }

 private:
  template <class Channel>
  void bootstrap(Channel& channel, const IpcRecord& mine, const IpcLocalMemory& local, const char* call) {
    const std::vector<IpcRecord> records = channel.exchange(mine);
    std::exception_ptr error;
    try {
      validate_records(records, call);
      open_peers(records, local, channel.rank(), call);
      opener_.publish(view_);  // the last step that can fail: the status exchange comes after it
    } catch (...) {
      error = std::current_exception();
      close_all();
    }
    try {
      ipc_detail::throw_if_any_failed(channel, error, call, "to check, open or publish the peers' memory");
    } catch (...) {
      close_all();
      throw;
    }
  }

  void open_peers(const std::vector<IpcRecord>& records, const IpcLocalMemory& local, int rank, const char* call) {
    const int n = static_cast<int>(records.size());
    view_ = kernel::RankView{};
    view_.rank = rank;
    view_.nranks = n;
    view_.blocks = records[0].blocks;
    view_.layout = records[0].layout;
    for (int r = 0; r < n; ++r) {
      const IpcRecord& record = records[static_cast<std::size_t>(r)];
      if (r == rank) {  // its own memory: not through IPC (a process cannot open its own handle)
        view_.scratch[r] = local.scratch;
        view_.signals[r] = local.signals;
        continue;
      }
      view_.scratch[r] = static_cast<unsigned char*>(open(record.scratch, r, call));
      view_.signals[r] = static_cast<kernel::Signals*>(open(record.signals, r, call));
    }
    // One ring, 0..n-1, the same on every rank without exchanging anything (a rank's GPU is its own
    // process's; no rank sees the others' topology here).
    fill_rings(view_, identity_ring_orders(n));
    view_.state = local.state;
    view_.timeout = local.timeout;
    view_.timeout_ns = local.timeout_ns;
    view_.delay_seed = local.delay_seed;
  }

  void* open(const IpcHandle& handle, int peer, const char* call) {
    void* pointer = opener_.open(handle, peer);
    if (pointer == nullptr) throw make_error(ErrorCode::internal, call, peer, "opening its memory handle gave a null pointer");
    opened_.push_back(pointer);
    return pointer;
  }

  void close_all() noexcept {
    for (void* pointer : opened_) opener_.close(pointer);
    opened_.clear();
  }

  Opener opener_;
  std::vector<void*> opened_;
  kernel::RankView view_{};
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
