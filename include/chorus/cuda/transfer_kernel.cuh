// The kernel of cuda::Team::transfer: the p2p body of cuda/kernel/p2p.hpp (the one the CPU twin runs),
// instantiated with DeviceBlock. Launched as the other collective kernels are (one launch may carry
// several virtual ranks, rank = blockIdx.x / blocks); every rank's table of sends and receives travels
// in the launch's parameters (about 3 KiB for 8 ranks), so a call needs no device allocation.
#pragma once

#include "../core/config.hpp"
#include "device_block.cuh"
#include "kernel/bounded_wait.hpp"
#include "kernel/launch_args.hpp"
#include "kernel/p2p.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Ranks listed in no transfer return at once: their blocks are in the cooperative grid (its size is
// fixed per team) but touch no memory.
template <class T>
__global__ void __launch_bounds__(kMaxThreadsPerBlock) transfer_kernel(const kernel::RankView* views, TransferTables tables, int first_rank, int blocks_per_rank) {
  const int rank = first_rank + static_cast<int>(blockIdx.x) / blocks_per_rank;
  const int block = static_cast<int>(blockIdx.x) % blocks_per_rank;
  const kernel::P2pTable& table = tables.table[rank];
  if (table.send_count + table.recv_count == 0) return;
  const DeviceBlock device_block(block, views[rank].timeout_ns, &views[rank].signals[rank]->aborted);
  kernel::mark_started(device_block, views[rank]);
  kernel::p2p<T>(device_block, views[rank], table);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
