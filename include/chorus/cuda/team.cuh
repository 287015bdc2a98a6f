// chorus::cuda::Team: ranks on GPUs of this process, running chorus's own collective kernels: the
// BasicTeam written once over a Device (basic_team.hpp says what it does), here over CudaDevice. The CPU
// twin (twin/twin_team.hpp) runs the same template over TwinDevice, so everything but CudaDevice
// (device/cuda_device.cuh) is proven on the CPU.
//
//   auto team = chorus::cuda::Team::virtual_ranks(0, 4);   // 4 ranks on GPU 0: tests every algorithm on one GPU
//   chorus::cuda::Team team({0, 1, 2, 3});                  // one rank per GPU, peer access enabled
//   team.all_reduce(inputs, outputs, count, ReduceOp::sum, Algorithm::ring, streams);  // all ranks, one call
//   team.synchronize();                                     // bounded; a kernel timeout becomes chorus::Error
//
// Each all_reduce is an NVTX range named for the kernel that runs, e.g. "chorus::all_reduce 4 MiB float32
// sum two_shot" (runtime/nvtx_range.hpp): Algorithm::automatic shows what kernel_for chose.
#pragma once

#include "../core/config.hpp"
#include "basic_team.hpp"
#include "device/cuda_device.cuh"

CHORUS_NAMESPACE_BEGIN namespace cuda {

using TeamOptions = BasicTeamOptions<CudaDevice>;
using Team = BasicTeam<CudaDevice>;
using CurrentDeviceGuard = CudaDevice::CurrentGuard;

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda

#include "team_comm.cuh"
