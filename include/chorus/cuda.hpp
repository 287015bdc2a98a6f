// chorus's own GPU backend (opt-in): the all-reduce kernels and cuda::Team. Needs nvcc: the kernels are
// device code. The kernels' CPU twin (<chorus/cuda/twin/twin_team.hpp>) needs no CUDA at all.
#pragma once

#if !defined(__CUDACC__)
#error "chorus: <chorus/cuda.hpp> holds CUDA kernels: compile this unit with nvcc (or include <chorus/cuda/twin/twin_team.hpp> for the CPU twin)"
#endif

#include "cuda/collective_kernel.cuh"
#include "cuda/device_block.cuh"
#include "cuda/runtime_check.hpp"
#include "cuda/ipc_comm.cuh"
#include "cuda/launch.cuh"
#include "cuda/team.cuh"
