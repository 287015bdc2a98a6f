// twin::RankComm: one rank's communicator on a CPU twin team (cuda/team_comm.hpp), the same per-rank view
// cuda::Team has, run on the twin's threads, so the view and its rendezvous are proven under the
// sanitizers. The twin has no streams: a call returns once the team call is complete, and the view itself
// satisfies the communicator contract (on() and wait() exist for symmetry and do nothing).
//
//   chorus::cuda::twin::Team team(4, {/*blocks*/ 1, /*lanes*/ 2});
//   // one thread per rank:                       // or one thread for all ranks:
//   team.comm(r).all_reduce(x, x, n, sum);         team.group([&] { for (int r = 0; r < 4; ++r) team.comm(r).all_reduce(...); });
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../../core/communicator.hpp"
#include "../../core/data_type.hpp"
#include "../../core/error.hpp"
#include "../rendezvous.hpp"
#include "../transfer.hpp"
#include "../team_comm.hpp"
#include "twin_team.hpp"

namespace chorus::cuda::twin {

// How a view's calls run on a twin team (the Adapter of BasicRankComm).
class TeamAdapter {
 public:
  using Stream = std::nullptr_t;

  explicit TeamAdapter(Team& team) : team_(&team) {}
  explicit TeamAdapter(std::unique_ptr<Team> owned) : owned_(std::move(owned)), team_(owned_.get()) {}

  int size() const { return team_->size(); }
  const KernelCrossovers& crossovers() const { return team_->options().crossovers; }

  // Every rank's part of one collective of element type T (BasicRankComm::run_calls).
  template <class T>
  void collective(const std::vector<RankCall>& calls) {
    const runtime::CallDescriptor& d = calls.front().described;
    const kernel::KernelAlgorithm algorithm = calls.front().kernel;
    std::vector<const T*> inputs;
    std::vector<T*> outputs;
    for (const RankCall& call : calls) {
      inputs.push_back(static_cast<const T*>(call.send));
      outputs.push_back(static_cast<T*>(call.recv));
    }
    switch (d.collective()) {
      case Collective::all_reduce: return team_->all_reduce(inputs, outputs, d.count, d.op, algorithm);
      case Collective::broadcast: return team_->broadcast(inputs, outputs, d.count, d.root, algorithm);
      case Collective::reduce: return team_->reduce(inputs, outputs, d.count, d.op, d.root, algorithm);
      case Collective::all_gather: return team_->all_gather(inputs, outputs, d.count, algorithm);
      case Collective::reduce_scatter: return team_->reduce_scatter(inputs, outputs, d.count, d.op, algorithm);
      case Collective::all_to_all: return team_->all_to_all(inputs, outputs, d.count, algorithm);
    }
  }

  // A one-int all_reduce through the kernels: it returns only once every rank's kernel has run.
  void barrier(const std::vector<RankCall>& calls) {
    std::vector<int> flags(calls.size(), 0);
    std::vector<const int*> inputs;
    std::vector<int*> outputs;
    for (int& flag : flags) {
      inputs.push_back(&flag);
      outputs.push_back(&flag);
    }
    team_->all_reduce(inputs, outputs, 1, ReduceOp::sum, kernel_for(Algorithm::automatic, sizeof(int), size()));
  }

  std::shared_ptr<TeamAdapter> split(const std::vector<int>& members) const {
    Options options = team_->options();
    options.ring_orders.clear();  // the new team's ring is 0..k-1
    return std::make_shared<TeamAdapter>(std::make_unique<Team>(static_cast<int>(members.size()), options));
  }

  // Matched send/recv pairs as one Team::transfer of bytes (a transfer copies; the type was checked).
  void transfer(const std::vector<PeerTransfer>& transfers) { team_->transfer(as_bytes(transfers)); }

  void wait(int, Stream) {}

 private:
  std::unique_ptr<Team> owned_;
  Team* team_;
};

using RankComm = BasicRankComm<TeamAdapter>;
static_assert(check_communicator<RankComm>(), "chorus::cuda::twin::RankComm must satisfy the communicator contract");

inline RankComm Team::comm(int rank) {
  if (rank < 0 || rank >= ranks_) {
    throw make_error(ErrorCode::invalid_argument, "cuda::twin::Team::comm", rank, "rank ", rank, " is not a rank of this ", ranks_,
                     "-rank team");
  }
  // The first view makes the team's rendezvous; every later one, from any thread, shares it.
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  if (!comm_state_) {
    auto adapter = std::make_shared<TeamAdapter>(*this);
    comm_state_.state = std::make_shared<RankComm>(RankComm::of_team(adapter, 0));
  }
  const auto& first = *static_cast<const RankComm*>(comm_state_.state.get());
  return first.view_of(rank);
}

template <class Fn>
void Team::group(Fn&& fn) {
  Group group;
  fn();
  group.end();
}

}  // namespace chorus::cuda::twin
