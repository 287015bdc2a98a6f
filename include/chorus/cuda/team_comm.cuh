// cuda::RankComm: one rank's communicator on a cuda::Team (team_comm.hpp, team_adapter.hpp), on a stream:
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

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "team.cuh"
#include "team_adapter.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

using RankComm = BasicRankComm<TeamAdapter<CudaDevice>>;
static_assert(check_communicator<RankComm>(), "chorus::cuda::RankComm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
