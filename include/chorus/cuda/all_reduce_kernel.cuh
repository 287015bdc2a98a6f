// The all_reduce kernel: the same per-block bodies as the CPU twin (cuda/kernel/), instantiated with
// DeviceBlock. One launch may carry several ranks (virtual ranks on one GPU: grid = ranks x blocks,
// rank = blockIdx.x / blocks); the views and per-rank buffers are in device memory so the launch's
// arguments stay small and a captured CUDA graph can be replayed.
#pragma once

#include "device_block.cuh"
#include "kernel/all_reduce.hpp"

namespace chorus::cuda {

// Every rank's buffers for one call, passed by value (a few hundred bytes of kernel parameters).
struct CallBuffers {
  const void* input[kernel::kMaxRanks];
  void* output[kernel::kMaxRanks];
  int takes_part[kernel::kMaxRanks];  // 0: the rank skips the call (tests of the timeout path)
};

template <class T>
__global__ void all_reduce_kernel(const kernel::RankView* views, CallBuffers buffers, int first_rank,
                                  int blocks_per_rank, std::size_t count, ReduceOp op,
                                  kernel::KernelAlgorithm algorithm) {
  const int rank = first_rank + static_cast<int>(blockIdx.x) / blocks_per_rank;
  const int block = static_cast<int>(blockIdx.x) % blocks_per_rank;
  const kernel::RankView& view = views[rank];
  if (!buffers.takes_part[rank]) return;
  const DeviceBlock device_block(block, view.timeout_ns);
  const kernel::AllReduceCall<T> call{static_cast<const T*>(buffers.input[rank]), static_cast<T*>(buffers.output[rank]),
                                      count, op};
  kernel::all_reduce(device_block, view, call, algorithm);
}

}  // namespace chorus::cuda
