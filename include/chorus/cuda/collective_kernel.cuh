// The kernel of every collective but all_reduce's own entry (all_reduce_kernel.cuh): the per-block bodies
// of cuda/kernel/collective.hpp, the same the CPU twin runs, instantiated with DeviceBlock. Launched as
// all_reduce_kernel is: one launch may carry several (virtual) ranks, rank = blockIdx.x / blocks.
#pragma once

#include "all_reduce_kernel.cuh"
#include "device_block.cuh"
#include "kernel/collective.hpp"

namespace chorus::cuda {

// What every rank's call shares, passed by value.
struct CollectiveArgs {
  Collective collective;
  std::size_t count;
  ReduceOp op;
  int root;
  kernel::KernelAlgorithm algorithm;
};

template <class T>
__global__ void collective_kernel(const kernel::RankView* views, CallBuffers buffers, int first_rank, int blocks_per_rank,
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
