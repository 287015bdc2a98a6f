// One rank's all_reduce arguments as every kernel body takes them, and the scratch regions it may use.
#pragma once

#include <cstddef>

#include "../../core/config.hpp"
#include "../../core/reduce_op.hpp"
#include "rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

template <class T>
struct AllReduceCall {
  const T* input;
  T* output;
  std::size_t count;
  ReduceOp op;
};

// Which kernel body runs. One-shot and two-shot pull through staging behind flag barriers; LL pushes
// flagged lines (no barrier); ring is the Simple protocol's FIFO ring, one channel per block; tree is the
// double binary tree over per-link Simple FIFOs (tree.hpp). pairwise is all_to_all only: every pair's
// block moved by the p2p body (pairwise.hpp).
enum class KernelAlgorithm { one_shot, two_shot, ll_one_shot, ring, tree, pairwise };

inline constexpr const char* to_string(KernelAlgorithm algorithm) {
  switch (algorithm) {
    case KernelAlgorithm::one_shot: return "one_shot";
    case KernelAlgorithm::two_shot: return "two_shot";
    case KernelAlgorithm::ll_one_shot: return "ll_one_shot";
    case KernelAlgorithm::ring: return "ring";
    case KernelAlgorithm::tree: return "tree";
    case KernelAlgorithm::pairwise: return "pairwise";
  }
  return "unknown";
}

template <class T>
CHORUS_HOST_DEVICE inline T* staging_of(const RankView& view, int rank) {
  return reinterpret_cast<T*>(view.scratch[rank] + view.layout.staging_offset());
}
template <class T>
CHORUS_HOST_DEVICE inline T* result_of(const RankView& view, int rank) {
  return reinterpret_cast<T*>(view.scratch[rank] + view.layout.result_offset());
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
