// Launching ranks' blocks of chorus's kernels, shared by cuda::Team (every rank of this process; virtual
// ranks in one launch) and cuda::IpcComm (this process's one rank): how many blocks a device keeps
// resident, and the cooperative launch of `ranks` x `blocks` blocks that relies on it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../core/error.hpp"
#include "all_reduce_kernel.cuh"
#include "collective_kernel.cuh"
#include "runtime_check.hpp"

namespace chorus::cuda {

// The most blocks per rank `device` keeps resident at once for `ranks` ranks in one launch, over every
// element type's kernel (register use, and so occupancy, may differ between them). Sets the current device.
inline int max_resident_blocks(int device, int threads, int ranks, const char* call, int rank) {
  check_cuda(cudaSetDevice(device), call, rank, "cudaSetDevice");
  int sms = 0, per_sm = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), call, rank, "cudaDeviceGetAttribute");
  int blocks = kernel::kMaxBlocks;
  for (const void* kernel :
       {reinterpret_cast<const void*>(&all_reduce_kernel<std::int8_t>), reinterpret_cast<const void*>(&all_reduce_kernel<std::uint8_t>),
        reinterpret_cast<const void*>(&all_reduce_kernel<std::int32_t>), reinterpret_cast<const void*>(&all_reduce_kernel<std::uint32_t>),
        reinterpret_cast<const void*>(&all_reduce_kernel<std::int64_t>), reinterpret_cast<const void*>(&all_reduce_kernel<std::uint64_t>),
        reinterpret_cast<const void*>(&all_reduce_kernel<half>), reinterpret_cast<const void*>(&all_reduce_kernel<bfloat16>),
        reinterpret_cast<const void*>(&all_reduce_kernel<float>), reinterpret_cast<const void*>(&all_reduce_kernel<double>),
        reinterpret_cast<const void*>(&collective_kernel<std::int8_t>), reinterpret_cast<const void*>(&collective_kernel<std::uint8_t>),
        reinterpret_cast<const void*>(&collective_kernel<std::int32_t>), reinterpret_cast<const void*>(&collective_kernel<std::uint32_t>),
        reinterpret_cast<const void*>(&collective_kernel<std::int64_t>), reinterpret_cast<const void*>(&collective_kernel<std::uint64_t>),
        reinterpret_cast<const void*>(&collective_kernel<half>), reinterpret_cast<const void*>(&collective_kernel<bfloat16>),
        reinterpret_cast<const void*>(&collective_kernel<float>), reinterpret_cast<const void*>(&collective_kernel<double>)}) {
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0), call, rank,
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    blocks = std::min(blocks, per_sm * sms / ranks);
  }
  return blocks;
}

// One cooperative launch of `ranks` ranks' blocks (grid = ranks x blocks; the kernel's rank is
// first_rank + blockIdx.x / blocks): every block resident at once, so no block waits for one that never
// gets an SM. `args`: the kernel's parameters, as cudaLaunchCooperativeKernel takes them.
inline void launch_rank_blocks(const void* kernel, void** args, int ranks, int blocks, int threads, cudaStream_t stream,
                               const char* call, int first_rank) {
  const dim3 grid(static_cast<unsigned>(blocks * ranks));
  check_cuda(cudaLaunchCooperativeKernel(kernel, grid, dim3(static_cast<unsigned>(threads)), args, 0, stream), call, first_rank,
             "cudaLaunchCooperativeKernel");
}

}  // namespace chorus::cuda
