// The one kernel of every collective: the per-block bodies of cuda/kernel/collective.hpp (the same the CPU
// twin runs), instantiated with DeviceBlock. One launch may carry several ranks (virtual ranks on one GPU:
// grid = ranks x blocks, rank = blockIdx.x / blocks); the views and per-rank buffers are in device memory
// or passed by value, so the launch's arguments stay small and a captured CUDA graph can be replayed.
// One entry point for all collectives keeps the instantiations (and nvcc's time) to one per element type.
#pragma once

#include "device_block.cuh"
#include "kernel/collective.hpp"

namespace chorus::cuda {

// Every rank's buffers for one call, passed by value (a few hundred bytes of kernel parameters).
struct CallBuffers {
  const void* input[kernel::kMaxRanks];
  void* output[kernel::kMaxRanks];
  int takes_part[kernel::kMaxRanks];  // 0: the rank skips the call (tests of the timeout path)
};

// What every rank's call shares, passed by value.
struct CollectiveArgs {
  Collective collective;
  std::size_t count;
  ReduceOp op;
  int root;
  kernel::KernelAlgorithm algorithm;
};

template <class T>
__global__ void __launch_bounds__(kMaxThreadsPerBlock) collective_kernel(const kernel::RankView* views, CallBuffers buffers, int first_rank, int blocks_per_rank,
                                  CollectiveArgs args) {
  const int rank = first_rank + static_cast<int>(blockIdx.x) / blocks_per_rank;
  const int block = static_cast<int>(blockIdx.x) % blocks_per_rank;
  const kernel::RankView& view = views[rank];
  if (!buffers.takes_part[rank]) return;
  const DeviceBlock device_block(block, view.timeout_ns);
  const kernel::CollectiveCall<T> call{args.collective, static_cast<const T*>(buffers.input[rank]),
                                       static_cast<T*>(buffers.output[rank]), args.count, args.op, args.root};
  kernel::collective(device_block, view, call, args.algorithm);
}

}  // namespace chorus::cuda
