// How a per-rank view (team_comm.hpp: BasicRankComm) runs its calls on a BasicTeam<Device>, written once
// for the GPU (cuda::RankComm) and the CPU twin (cuda::twin::RankComm). The rendezvous hands it every
// rank's part of a call once they agree; it makes the one team call with all ranks' buffers and streams.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "basic_team.hpp"
#include "rendezvous.hpp"
#include "team_comm.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class Device>
class TeamAdapter {
 public:
  using Stream = typename Device::Stream;
  using Team = BasicTeam<Device>;

  explicit TeamAdapter(Team& team) : team_(&team) {}
  explicit TeamAdapter(std::unique_ptr<Team> owned) : owned_(std::move(owned)), team_(owned_.get()) {}
  // The barrier's ints may still be read by queued kernels: wait for the team's work before freeing them.
  ~TeamAdapter() {
    if (flags_.empty()) return;
    try {
      team_->synchronize();
    } catch (...) {
      return;  // not drained: leak the ints rather than free them under a kernel
    }
    const typename Device::CurrentGuard keep_device;
    for (std::size_t r = 0; r < flags_.size(); ++r) Device(team_->device(static_cast<int>(r))).free(flags_[r]);
  }
  TeamAdapter(const TeamAdapter&) = delete;
  TeamAdapter& operator=(const TeamAdapter&) = delete;

  int size() const { return team_->size(); }
  const KernelCrossovers& crossovers() const { return team_->options().crossovers; }

  // Every rank's part of one collective of element type T (BasicRankComm::run_calls: only the types a
  // program calls are compiled).
  template <class T>
  void collective(const std::vector<RankCall>& calls) {
    const runtime::CallDescriptor& d = calls.front().described;
    std::vector<const T*> inputs;
    std::vector<T*> outputs;
    for (const RankCall& call : calls) {
      inputs.push_back(static_cast<const T*>(call.send));
      outputs.push_back(static_cast<T*>(call.recv));
    }
    team_->collective_with(d.collective(), inputs, outputs, d.count, d.op, d.root, calls.front().kernel, streams_of(calls));
  }

  // A one-int all_reduce through the kernels on the ranks' streams (an int per rank, kept for the next):
  // the rendezvous has already seen every rank arrive; the kernel orders the streams after it.
  void barrier(const std::vector<RankCall>& calls) {
    if (flags_.empty()) {
      const typename Device::CurrentGuard keep_device;
      for (int r = 0; r < size(); ++r) {
        const Device device(team_->device(r));
        flags_.push_back(static_cast<int*>(device.allocate(sizeof(int), "barrier", r)));
        device.memset(flags_.back(), 0, sizeof(int), "barrier", r);
        device.synchronize("barrier", r);
      }
    }
    const std::vector<const int*> inputs(flags_.begin(), flags_.end());
    team_->all_reduce_with(inputs, flags_, 1, ReduceOp::sum, kernel_for(Algorithm::automatic, sizeof(int), size()), streams_of(calls));
  }

  // The members' devices as a new team (virtual ranks stay virtual), same options but the rings: the
  // parent's name its ranks, so the new team derives its own.
  std::shared_ptr<TeamAdapter> split(const std::vector<int>& members) const {
    typename Team::Options options = team_->options();
    options.ring_orders.clear();
    if (team_->is_virtual()) {
      return std::make_shared<TeamAdapter>(
          std::make_unique<Team>(Team::virtual_ranks(team_->device(0), static_cast<int>(members.size()), options)));
    }
    std::vector<int> devices;
    for (int r : members) devices.push_back(team_->device(r));
    return std::make_shared<TeamAdapter>(std::make_unique<Team>(devices, options));
  }

  // Matched send/recv pairs as one transfer of bytes, on the ranks' streams. A rank in no pair (its blocks
  // return at once) gets, on a virtual team, the first sender's stream (one launch, one stream) and
  // otherwise its own device's default stream (a stream belongs to one device).
  void transfer(const std::vector<PeerTransfer>& transfers) {
    const Stream idle = team_->is_virtual() ? static_cast<Stream>(transfers.front().send_stream) : Stream{};
    std::vector<Stream> streams(static_cast<std::size_t>(size()), idle);
    for (const PeerTransfer& t : transfers) {
      streams[static_cast<std::size_t>(t.from)] = static_cast<Stream>(t.send_stream);
      streams[static_cast<std::size_t>(t.to)] = static_cast<Stream>(t.recv_stream);
    }
    team_->transfer(as_bytes(transfers), one_if_same_on_virtual(std::move(streams)));
  }

  // Bounded; a kernel's timeout or an abort becomes chorus::Error (BasicTeam::synchronize).
  void wait(int, Stream) { team_->synchronize(); }

 private:
  std::vector<Stream> streams_of(const std::vector<RankCall>& calls) const {
    std::vector<Stream> streams;
    for (const RankCall& call : calls) streams.push_back(static_cast<Stream>(call.stream));
    return one_if_same_on_virtual(std::move(streams));
  }
  // Virtual ranks run in one launch, so on one stream: one for all when every rank gave the same (else
  // the team refuses them). Ranks on several GPUs keep one stream each, even when all are the default.
  std::vector<Stream> one_if_same_on_virtual(std::vector<Stream> streams) const {
    if (!team_->is_virtual()) return streams;
    for (Stream stream : streams) {
      if (stream != streams.front()) return streams;
    }
    return {streams.front()};
  }

  std::unique_ptr<Team> owned_;
  Team* team_;
  std::vector<int*> flags_;  // barrier's int per rank, on its device
};

template <class Device>
BasicRankComm<TeamAdapter<Device>> BasicTeam<Device>::comm(int rank) {
  using View = BasicRankComm<TeamAdapter<Device>>;
  if (rank < 0 || rank >= size()) {
    throw make_error(ErrorCode::invalid_argument, call_name<Device>("Team::comm"), rank, "rank ", rank, " is not a rank of this ",
                     size(), "-rank team");
  }
  // The first view makes the team's rendezvous; every later one, from any thread, shares it.
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  if (!comm_state_) comm_state_ = std::make_shared<View>(View::of_team(std::make_shared<TeamAdapter<Device>>(*this), 0));
  return static_cast<const View*>(comm_state_.get())->view_of(rank);
}

template <class Device>
template <class Fn>
void BasicTeam<Device>::group(Fn&& fn) {
  Group group;
  fn();
  group.end();
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
