// One rank-block's part of an all_reduce: picks the body for the algorithm. The device kernel and the
// CPU twin both call this, with their own Block.
#pragma once

#include "../../core/config.hpp"
#include "all_reduce_call.hpp"
#include "ll_one_shot.hpp"
#include "one_shot.hpp"
#include "ring.hpp"
#include "tree.hpp"
#include "two_shot.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool all_reduce(const Block& block, const RankView& view, const AllReduceCall<T>& call,
                                          KernelAlgorithm algorithm) {
  switch (algorithm) {
    case KernelAlgorithm::one_shot: return one_shot_all_reduce(block, view, call);
    case KernelAlgorithm::two_shot: return two_shot_all_reduce(block, view, call);
    case KernelAlgorithm::ll_one_shot: return ll_one_shot_all_reduce(block, view, call);
    case KernelAlgorithm::ring: return ring_all_reduce(block, view, call);
    case KernelAlgorithm::tree: return tree_all_reduce(block, view, call);
    case KernelAlgorithm::pairwise: return false;  // all_to_all only (supports() refuses it before launch)
  }
  return false;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
