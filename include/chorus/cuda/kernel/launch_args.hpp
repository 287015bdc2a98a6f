// What one launch of chorus's kernels carries besides the views, passed by value (a few KiB of kernel
// parameters at most, so a call needs no device allocation and a captured CUDA graph can be replayed).
// Plain C++17: the Device that launches (CudaDevice, TwinDevice) and the team code that fills them share it.
#pragma once

#include <cstddef>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/reduce_op.hpp"
#include "all_reduce_call.hpp"
#include "p2p.hpp"
#include "rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Every rank's buffers for one collective.
struct CallBuffers {
  const void* input[kernel::kMaxRanks];
  void* output[kernel::kMaxRanks];
  int takes_part[kernel::kMaxRanks];  // 0: the rank skips the call (tests of the timeout path)
};

// What every rank's call shares.
struct CollectiveArgs {
  Collective collective;
  std::size_t count;
  ReduceOp op;
  int root;
  kernel::KernelAlgorithm algorithm;
};

// Every rank's sends and receives for one transfer launch (about 3 KiB for 8 ranks).
struct TransferTables {
  kernel::P2pTable table[kernel::kMaxRanks];
};

// Where one launch runs: `ranks` ranks from `first_rank` (virtual ranks share a launch), `blocks` blocks of
// `threads` each per rank; `views` is device memory holding every rank's view (the launch reads its own).
struct LaunchShape {
  const kernel::RankView* views;
  int first_rank;
  int ranks;
  int blocks;
  int threads;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
