// cuda::RankComm: one rank's communicator on a cuda::Team (team_comm.hpp), on a stream:
//
//   chorus::cuda::Team team({0, 1});
//   // one thread per rank (each its own device and stream):
//   team.comm(rank).on(stream).all_reduce(grad, grad, n, chorus::ReduceOp::avg);
//   // or one thread for all ranks:
//   team.group([&] { for (int r = 0; r < 2; ++r) team.comm(r).on(streams[r]).all_reduce(...); });
//
// Stream-ordered, as nccl::View: a call returns once the team's kernels are enqueued on the ranks'
// streams (the last rank's arrival enqueues them); the work is done when the stream reaches it, which
// wait() (bounded; it synchronizes the team and reports a kernel's timeout) or later stream work observes.
// Virtual ranks run in one launch, so on one stream: give every rank the same one (the team refuses
// different streams, and every rank's call gets that chorus::Error). Buffers are device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "rendezvous.hpp"
#include "runtime_check.hpp"
#include "team.cuh"
#include "team_comm.hpp"

namespace chorus::cuda {

// How a view's calls run on a cuda::Team (the Adapter of BasicRankComm).
class CudaTeamAdapter {
 public:
  using Stream = cudaStream_t;

  explicit CudaTeamAdapter(Team& team) : team_(&team) {}
  explicit CudaTeamAdapter(std::unique_ptr<Team> owned) : owned_(std::move(owned)), team_(owned_.get()) {}
  ~CudaTeamAdapter() {
    const CurrentDeviceGuard keep_device;
    for (std::size_t r = 0; r < flags_.size(); ++r) {
      cudaSetDevice(team_->device(static_cast<int>(r)));
      cudaFree(flags_[r]);
    }
  }
  CudaTeamAdapter(const CudaTeamAdapter&) = delete;
  CudaTeamAdapter& operator=(const CudaTeamAdapter&) = delete;

  int size() const { return team_->size(); }
  const KernelCrossovers& crossovers() const { return team_->options().crossovers; }

  // Every rank's part of one collective of element type T (BasicRankComm::run_calls: only the types a
  // program calls are compiled).
  template <class T>
  void collective(const std::vector<RankCall>& calls) {
    const runtime::CallDescriptor& d = calls.front().described;
    const kernel::KernelAlgorithm algorithm = calls.front().kernel;
    const std::vector<cudaStream_t> streams = streams_of(calls);
    std::vector<const T*> inputs;
    std::vector<T*> outputs;
    for (const RankCall& call : calls) {
      inputs.push_back(static_cast<const T*>(call.send));
      outputs.push_back(static_cast<T*>(call.recv));
    }
    if (d.collective() == Collective::all_reduce) {
      team_->all_reduce_with(inputs, outputs, d.count, d.op, algorithm, streams);
    } else {
      team_->collective_with(d.collective(), inputs, outputs, d.count, d.op, d.root, algorithm, streams);
    }
  }

  // A one-int all_reduce through the kernels on the ranks' streams (an int per rank, kept for the next).
  void barrier(const std::vector<RankCall>& calls) {
    const CurrentDeviceGuard keep_device;
    if (flags_.empty()) {
      for (int r = 0; r < size(); ++r) {
        flags_.push_back(nullptr);
        check_cuda(cudaSetDevice(team_->device(r)), "barrier", r, "cudaSetDevice");
        check_cuda(cudaMalloc(reinterpret_cast<void**>(&flags_.back()), sizeof(int)), "barrier", r, "cudaMalloc");
        check_cuda(cudaMemset(flags_.back(), 0, sizeof(int)), "barrier", r, "cudaMemset");
      }
    }
    const std::vector<const int*> inputs(flags_.begin(), flags_.end());
    team_->all_reduce_with(inputs, flags_, 1, ReduceOp::sum, kernel_for(Algorithm::automatic, sizeof(int), size()), streams_of(calls));
  }

  // The members' devices as a new team (virtual ranks on the same GPU stay virtual), same options but the
  // rings: the parent's name its ranks, so the new team derives its own.
  std::shared_ptr<CudaTeamAdapter> split(const std::vector<int>& members) const {
    TeamOptions options = team_->options();
    options.ring_orders.clear();
    if (team_->is_virtual()) {
      return std::make_shared<CudaTeamAdapter>(
          std::make_unique<Team>(Team::virtual_ranks(team_->device(0), static_cast<int>(members.size()), options)));
    }
    std::vector<int> devices;
    for (int r : members) devices.push_back(team_->device(r));
    return std::make_shared<CudaTeamAdapter>(std::make_unique<Team>(devices, options));
  }

  // Matched send/recv pairs as one Team::transfer of bytes, on the ranks' streams. A rank in no pair
  // (its blocks return at once) gets, on a virtual team, the first sender's stream (one launch, one
  // stream) and otherwise its own device's default stream (a stream belongs to one device).
  void transfer(const std::vector<PeerTransfer>& transfers) {
    const auto idle = team_->is_virtual() ? static_cast<cudaStream_t>(transfers.front().send_stream) : cudaStream_t{};
    std::vector<cudaStream_t> streams(static_cast<std::size_t>(size()), idle);
    for (const PeerTransfer& t : transfers) {
      streams[static_cast<std::size_t>(t.from)] = static_cast<cudaStream_t>(t.send_stream);
      streams[static_cast<std::size_t>(t.to)] = static_cast<cudaStream_t>(t.recv_stream);
    }
    team_->transfer(as_bytes(transfers), one_if_same_on_virtual(std::move(streams)));
  }

  // Bounded; a kernel's timeout becomes chorus::Error (Team::synchronize).
  void wait(int, Stream) { team_->synchronize(); }

 private:
  std::vector<cudaStream_t> streams_of(const std::vector<RankCall>& calls) const {
    std::vector<cudaStream_t> streams;
    for (const RankCall& call : calls) streams.push_back(static_cast<cudaStream_t>(call.stream));
    return one_if_same_on_virtual(std::move(streams));
  }
  // Virtual ranks run in one launch, so on one stream: one for all when every rank gave the same (else
  // Team refuses them). Ranks on several GPUs keep one stream each, even when all are the default.
  std::vector<cudaStream_t> one_if_same_on_virtual(std::vector<cudaStream_t> streams) const {
    if (!team_->is_virtual()) return streams;
    for (cudaStream_t stream : streams) {
      if (stream != streams.front()) return streams;
    }
    return {streams.front()};
  }

  std::unique_ptr<Team> owned_;
  Team* team_;
  std::vector<int*> flags_;  // barrier's int per rank, on its device
};

using RankComm = BasicRankComm<CudaTeamAdapter>;
static_assert(check_communicator<RankComm>(), "chorus::cuda::RankComm must satisfy the communicator contract");

inline RankComm Team::comm(int rank) {
  if (rank < 0 || rank >= size()) {
    throw make_error(ErrorCode::invalid_argument, "cuda::Team::comm", rank, "rank ", rank, " is not a rank of this ", size(),
                     "-rank team");
  }
  // The first view makes the team's rendezvous; every later one, from any thread, shares it.
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  if (!comm_state_) comm_state_ = std::make_shared<RankComm>(RankComm::of_team(std::make_shared<CudaTeamAdapter>(*this), 0));
  return static_cast<const RankComm*>(comm_state_.get())->view_of(rank);
}

template <class Fn>
void Team::group(Fn&& fn) {
  Group group;
  fn();
  group.end();
}

}  // namespace chorus::cuda
