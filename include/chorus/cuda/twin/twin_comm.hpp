// twin::RankComm: one rank's communicator on a CPU twin team, the same per-rank view cuda::Team has
// (team_comm.hpp over team_adapter.hpp), run on the twin device's streams, so the view, its rendezvous and
// the stream ordering are proven under the sanitizers. Stream-ordered like the GPU's: read a result after
// wait() (or after later work on the same stream).
//
//   chorus::cuda::twin::Team team(4, {/*blocks*/ 1, /*threads*/ 2});
//   // one thread per rank:                       // or one thread for all ranks:
//   auto comm = team.comm(r);                      team.group([&] { for (int r = 0; r < 4; ++r) team.comm(r).all_reduce(...); });
//   comm.all_reduce(x, x, n, sum); comm.wait();
#pragma once

#include "../../core/communicator.hpp"
#include "../../core/config.hpp"
#include "../team_adapter.hpp"
#include "twin_team.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

using RankComm = BasicRankComm<TeamAdapter<TwinDevice>>;
static_assert(check_communicator<RankComm>(), "chorus::cuda::twin::RankComm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
