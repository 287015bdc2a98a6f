// The CPU twin of chorus's CUDA collective kernels: cuda::twin::Team is the very BasicTeam the GPU runs
// (basic_team.hpp), over TwinDevice (device/twin_device.hpp): ranks whose scratch, signals and counters
// are the twin device's memory, whose blocks and lanes are threads, and whose calls are enqueued on the
// twin's streams (worker threads), so a call returns before its kernel ran, as on a GPU. It is how the
// driver code and the kernels are proven where no GPU exists, under AddressSanitizer and ThreadSanitizer,
// and a way to watch a GPU algorithm on a laptop.
//
//   chorus::cuda::twin::Team team(4, {/*blocks*/ 2, /*threads*/ 4});
//   team.all_reduce(inputs, outputs, count, ReduceOp::sum, Algorithm::ring);      // all ranks at once
//   team.all_gather(inputs, outputs, send_count, Algorithm::direct);              // and the others
//   team.transfer<float>({{0, 1, send0, recv1, count}, {1, 0, send1, recv0, count}});  // point-to-point
//   team.synchronize();   // the results may be read now; a kernel timeout is chorus::Error here
#pragma once

#include "../../core/config.hpp"
#include "../basic_team.hpp"
#include "../device/twin_device.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

using Options = BasicTeamOptions<TwinDevice>;
using Team = BasicTeam<TwinDevice>;

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin

#include "twin_comm.hpp"
