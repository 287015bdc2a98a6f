// The one kernel of every collective: the per-block bodies of cuda/kernel/collective.hpp (the same the CPU
// twin runs), instantiated with DeviceBlock. One launch may carry several ranks (virtual ranks on one GPU:
// grid = ranks x blocks, rank = blockIdx.x / blocks); the views and per-rank buffers are in device memory
// or passed by value (kernel/launch_args.hpp), so the launch's arguments stay small and a captured CUDA
// graph can be replayed. CudaDevice launches it (cuda/device/cuda_device.cuh).
// One entry point for all collectives keeps the instantiations (and nvcc's time) to one per element type.
#pragma once

#include "../core/config.hpp"
#include "device_block.cuh"
#include "kernel/bounded_wait.hpp"
#include "kernel/collective.hpp"
#include "kernel/launch_args.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class T>
__global__ void __launch_bounds__(kMaxThreadsPerBlock) collective_kernel(const kernel::RankView* views, CallBuffers buffers, int first_rank, int blocks_per_rank,
                                  CollectiveArgs args) {
  const int rank = first_rank + static_cast<int>(blockIdx.x) / blocks_per_rank;
  const int block = static_cast<int>(blockIdx.x) % blocks_per_rank;
  const kernel::RankView& view = views[rank];
  if (!buffers.takes_part[rank]) return;
  const DeviceBlock device_block(block, view.timeout_ns, &view.signals[view.rank]->aborted);
  kernel::mark_started(device_block, view);
  const kernel::CollectiveCall<T> call{args.collective, static_cast<const T*>(buffers.input[rank]),
                                       static_cast<T*>(buffers.output[rank]), args.count, args.op, args.root};
  kernel::collective(device_block, view, call, args.algorithm);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
