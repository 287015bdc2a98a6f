// One rank-block's part of any collective: picks the body for the collective and algorithm (see
// supports() in collective_call.hpp; the host refuses the rest before launching). The device kernel and
// the CPU twin both call this, with their own Block.
#pragma once

#include "../../core/config.hpp"
#include "all_reduce.hpp"
#include "chain.hpp"
#include "collective_call.hpp"
#include "pairwise.hpp"
#include "ring_collectives.hpp"
#include "staged.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool collective(const Block& block, const RankView& view, const CollectiveCall<T>& call,
                                          KernelAlgorithm algorithm) {
  if (!supports(call.collective, algorithm)) return false;
  const bool ring = algorithm == KernelAlgorithm::ring;
  switch (call.collective) {
    case Collective::all_reduce:
      return all_reduce(block, view, AllReduceCall<T>{call.input, call.output, call.count, call.op}, algorithm);
    case Collective::broadcast: return ring ? chain_broadcast(block, view, call) : staged_broadcast(block, view, call);
    case Collective::reduce: return ring ? chain_reduce(block, view, call) : staged_reduce(block, view, call);
    case Collective::all_gather: return ring ? ring_all_gather(block, view, call) : staged_all_gather(block, view, call);
    case Collective::reduce_scatter:
      return ring ? ring_reduce_scatter(block, view, call) : staged_reduce_scatter(block, view, call);
    case Collective::all_to_all:
      return algorithm == KernelAlgorithm::pairwise ? pairwise_all_to_all(block, view, call) : staged_all_to_all(block, view, call);
  }
  return false;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
