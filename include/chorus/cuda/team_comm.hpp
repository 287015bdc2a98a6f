// One rank's communicator on a team that launches once for all ranks (cuda::Team, its CPU twin): the
// communicator contract (core/communicator.hpp) over chorus's own kernels, so generic code (the parallel
// layer, the contract's tests) runs on them.
//
//   auto comm = team.comm(rank);                         // twin::RankComm, or cuda::RankComm on a stream:
//   team.comm(rank).on(stream).all_reduce(x, x, n, chorus::ReduceOp::sum);
//
// Each call is checked on its rank (runtime/call_check.hpp: a bad argument fails that rank alone, at
// once) and deposited at the team's rendezvous (rendezvous.hpp): when every rank's part is there and
// they agree, the team call runs once with all ranks' buffers; ranks that disagree all get
// chorus::Error(mismatch) naming the value, and nothing runs. One thread per rank: a call returns once
// the team call was enqueued (stream-ordered, as nccl::View: wait() or later work on the stream observes
// it; on the twin too, whose streams are worker threads); one thread for all ranks:
// make the calls inside team.group(fn) (or a cuda::Group), which settles them at its end.
//   - Algorithm maps to a kernel through kernel_for (kernel_choice.hpp) at the team's crossovers, as
//     cuda::Team's own calls do;
//   - barrier is a team all_reduce of one int per rank;
//   - split(colour, key): every rank calls; the last arrival makes one new team per colour (same options,
//     default ring order) and each member gets its view of it; colour < 0 gives a null view (size() 0,
//     rank() -1, every call throws), as NCCL_SPLIT_NOCOLOR;
//   - send/recv: a's i-th send to b meets b's i-th recv from a; synchronous outside a group (both
//     return once the pair ran), so two ranks that both send to each other first time out, as with
//     MPI_Ssend. Inside a group the pairs made there run together, so exchanges do not deadlock.
// A view is a cheap copyable handle; the team it came from must stay in place while views are in use
// (views of a split own their team).
//
// The Adapter says how a team runs (team_adapter.hpp, over a BasicTeam<Device>):
//   using Stream;  int size() const;  const KernelCrossovers& crossovers() const;  (the team's options')
//   void collective(const std::vector<RankCall>&);  void barrier(const std::vector<RankCall>&);
//   std::shared_ptr<Adapter> split(const std::vector<int>& members) const;  (parent ranks, new-rank order)
//   void transfer(const std::vector<PeerTransfer>&);  void wait(int rank, Stream);
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/memory_space.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/collective_front.hpp"
#include "../runtime/validate.hpp"
#include "kernel_choice.hpp"
#include "rendezvous.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class Adapter>
class BasicRankComm : public runtime::CollectiveFront<BasicRankComm<Adapter>> {
 public:
  using Stream = typename Adapter::Stream;
  // Buffers are the device's memory (on the CPU twin, any host memory serves: its device memory is the
  // host's), and a call completes when its stream reaches it: read results after wait().
  static constexpr MemorySpace memory_space = MemorySpace::device;

  BasicRankComm() = default;  // a null communicator
  // Rank `rank` of the team `adapter` runs; `rendezvous`: that team's, shared by all its views.
  BasicRankComm(std::shared_ptr<Adapter> adapter, std::shared_ptr<Rendezvous> rendezvous, int rank, Stream stream = Stream{})
      : adapter_(std::move(adapter)), rendezvous_(std::move(rendezvous)), rank_(rank), stream_(stream) {}

  // The view of a fresh team: its rendezvous runs the adapter's calls.
  static BasicRankComm of_team(std::shared_ptr<Adapter> adapter, int rank) { return BasicRankComm(adapter, rendezvous_of(adapter), rank); }
  static std::shared_ptr<Rendezvous> rendezvous_of(const std::shared_ptr<Adapter>& adapter) {
    return std::make_shared<Rendezvous>(
        adapter->size(),
        [adapter](const std::vector<RankCall>& calls, std::vector<std::shared_ptr<void>>& results) {
          const runtime::CallKind kind = calls.front().described.kind;
          if (kind == runtime::CallKind::split) return split_team(adapter, calls, results);
          if (kind == runtime::CallKind::barrier) return adapter->barrier(calls);
          calls.front().run(adapter.get(), calls);  // the parts agree on the type: the rendezvous compared them
        },
        [adapter](const std::vector<PeerTransfer>& transfers) { adapter->transfer(transfers); });
  }

  int rank() const { return rendezvous_ ? rank_ : -1; }
  int size() const { return rendezvous_ ? rendezvous_->size() : 0; }
  explicit operator bool() const { return rendezvous_ != nullptr; }
  Stream stream() const { return stream_; }
  // Rank `rank`'s view of the same team, on the same stream (what team.comm(rank) returns).
  BasicRankComm view_of(int rank) const { return BasicRankComm(adapter_, rendezvous_, rank, stream_); }
  // The same rank on `stream`: its calls are ordered on that stream (a GPU team's).
  BasicRankComm on(Stream stream) const { return BasicRankComm(adapter_, rendezvous_, rank_, stream); }
  // Waits, bounded, until this team's calls so far are done (a GPU team's kernels; the twin's are done).
  void wait() const {
    runtime::check_comm("wait", rendezvous_ != nullptr);
    rendezvous_->exclusive([&] { adapter_->wait(rank_, stream_); });
  }

  // all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, typed and type-erased, and typed
  // send/recv: runtime::CollectiveFront.
  using runtime::CollectiveFront<BasicRankComm<Adapter>>::send;
  using runtime::CollectiveFront<BasicRankComm<Adapter>>::recv;

  void send(const void* data, std::size_t count, DataType type, int peer) {
    check_peer_call("send", data, count, type, peer);
    rendezvous_->send(rank_, peer, type, count, data, opaque(stream_));
  }
  void recv(void* data, std::size_t count, DataType type, int peer) {
    check_peer_call("recv", data, count, type, peer);
    rendezvous_->recv(rank_, peer, type, count, data, opaque(stream_));
  }

  void barrier() {
    runtime::check_comm("barrier", rendezvous_ != nullptr);
    RankCall part;
    part.described.kind = runtime::CallKind::barrier;
    part.stream = opaque(stream_);
    rendezvous_->call(rank_, part);
  }

  // Outside a group only: the new view is what the call returns.
  BasicRankComm split(int color, int key) {
    runtime::check_comm("split", rendezvous_ != nullptr);
    if (in_group()) {
      throw make_error(ErrorCode::unsupported, "split", rank_, "split inside group() is not supported: call it from one thread per rank");
    }
    RankCall part;
    part.described.kind = runtime::CallKind::split;
    part.described.color = color;
    part.described.key = key;
    part.stream = opaque(stream_);
    const std::shared_ptr<void> result = rendezvous_->call(rank_, part);
    if (!result) return BasicRankComm();
    const auto& member = *static_cast<const SplitResult*>(result.get());
    return BasicRankComm(member.adapter, member.rendezvous, member.rank, stream_);
  }

 private:
  struct SplitResult {
    std::shared_ptr<Adapter> adapter;
    std::shared_ptr<Rendezvous> rendezvous;
    int rank;
  };

  static void* opaque(Stream stream) { return static_cast<void*>(stream); }

  // Run by the last arrival: one team per colour, members ordered by (key, parent rank).
  static void split_team(const std::shared_ptr<Adapter>& adapter, const std::vector<RankCall>& calls,
                         std::vector<std::shared_ptr<void>>& results) {
    std::map<int, std::vector<std::pair<int, int>>> colours;  // colour -> (key, parent rank)
    for (int r = 0; r < static_cast<int>(calls.size()); ++r) {
      const runtime::CallDescriptor& d = calls[static_cast<std::size_t>(r)].described;
      if (d.color >= 0) colours[d.color].emplace_back(d.key, r);
    }
    for (auto& colour : colours) {
      std::sort(colour.second.begin(), colour.second.end());
      std::vector<int> members;
      for (const auto& entry : colour.second) members.push_back(entry.second);
      std::shared_ptr<Adapter> child = adapter->split(members);
      std::shared_ptr<Rendezvous> rendezvous = rendezvous_of(child);
      for (std::size_t i = 0; i < members.size(); ++i) {
        results[static_cast<std::size_t>(members[i])] = std::make_shared<SplitResult>(SplitResult{child, rendezvous, static_cast<int>(i)});
      }
    }
  }

  friend class runtime::CollectiveFront<BasicRankComm<Adapter>>;
  // The typed forms hand in T's runner only; the type-erased ones pick it from args.type, which compiles
  // every type's (an invalid type gets float's, and check_collective refuses the call before it runs).
  template <class T>
  void typed_collective(const runtime::CollectiveArgs& args) {
    collective(args, &run_calls<T>);
  }
  void erased_collective(const runtime::CollectiveArgs& args) {
    collective(args, visit_type(args.type, [](auto zero) { return &run_calls<decltype(zero)>; }));
  }
  template <class T>
  static void run_calls(void* adapter, const std::vector<RankCall>& calls) {
    static_cast<Adapter*>(adapter)->template collective<T>(calls);
  }
  void collective(const runtime::CollectiveArgs& args, void (*run)(void*, const std::vector<RankCall>&)) {
    const char* name = traits(args.collective).name;
    runtime::check_comm(name, rendezvous_ != nullptr);
    // A part that fails here is still handed in, marked: the other ranks' parts of this call then fail
    // at once naming this rank (instead of timing out), and every rank's next call is the same call.
    const auto abandon = [&](const Error& e) { rendezvous_->abandon(rank_, runtime::kind_of(args.collective), e.what()); };
    RankCall part;
    runtime::CheckedCall checked;
    try {
      checked = runtime::check_collective(args, rank_, size());
    } catch (const Error& e) {
      abandon(e);
      throw;
    }
    try {
      part.kernel = kernel_for_call(args.collective, args.algorithm, args.count * checked.element_size, size(), adapter_->crossovers());
    } catch (const Error& e) {
      const Error named = make_error(e.code(), name, rank_, e.what());
      abandon(named);
      throw named;
    }
    part.described = checked.descriptor;
    part.algorithm = args.algorithm;
    part.send = checked.uses_send ? args.send : nullptr;
    part.recv = checked.uses_recv ? args.recv : nullptr;
    part.stream = opaque(stream_);
    part.run = run;
    rendezvous_->call(rank_, part);
  }

  void check_peer_call(const char* name, const void* data, std::size_t count, DataType type, int peer) const {
    runtime::check_comm(name, rendezvous_ != nullptr);
    runtime::check_point_to_point(name, rank_, size(), data, count, type, peer);
  }

  std::shared_ptr<Adapter> adapter_;
  std::shared_ptr<Rendezvous> rendezvous_;
  int rank_ = -1;
  Stream stream_{};
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
