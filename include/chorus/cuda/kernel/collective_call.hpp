// One rank's arguments for any collective as the kernel bodies take them, and which kernel body serves
// which collective. `count` is the call's count as NCCL takes it: all_gather's send count, reduce_scatter's
// recv count, all_to_all's count per peer (core/collective.hpp says how big each buffer is).
#pragma once

#include <cstddef>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/reduce_op.hpp"
#include "all_reduce_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

template <class T>
struct CollectiveCall {
  Collective collective;
  const T* input;  // broadcast: read on the root only
  T* output;       // reduce: written on the root only
  std::size_t count;
  ReduceOp op;     // reducing collectives only
  int root;        // broadcast and reduce only
};

// all_reduce has all four bodies. The others: `one_shot` is the barrier pull through staging (every rank
// stages, a flag barrier, every rank reads what it needs from its peers' staging, a barrier); `ring` is the
// Simple FIFO ring, for all_gather and reduce_scatter (the gather and reduce halves of the ring all_reduce)
// and for broadcast and reduce (the pipelined chain along the ring, chain.hpp); `tree` is all_reduce's only;
// `pairwise` is all_to_all as grouped point-to-point transfers (pairwise.hpp).
CHORUS_HOST_DEVICE constexpr bool supports(Collective collective, KernelAlgorithm algorithm) {
  switch (collective) {
    case Collective::all_reduce: return algorithm != KernelAlgorithm::pairwise;
    case Collective::all_gather:
    case Collective::reduce_scatter: return algorithm == KernelAlgorithm::one_shot || algorithm == KernelAlgorithm::ring;
    case Collective::broadcast:
    case Collective::reduce: return algorithm == KernelAlgorithm::one_shot || algorithm == KernelAlgorithm::ring;
    case Collective::all_to_all: return algorithm == KernelAlgorithm::one_shot || algorithm == KernelAlgorithm::pairwise;
  }
  return false;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
