// One-shot all_reduce (barrier pull): each rank copies its input into its staging buffer, a flag barrier,
// then every rank reads every peer's staging and folds in rank order 0..n-1 (algo::one_shot_all_reduce's
// order, so every rank computes the same bits), then a barrier before anyone reuses its staging. Messages
// larger than the staging buffer go in rounds. The latency winner for small messages: one step.
#pragma once

#include "../../core/config.hpp"
#include "all_reduce_call.hpp"
#include "bounded_wait.hpp"
#include "partition.hpp"
#include "reduce_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// False if a wait timed out (the TimeoutRecord says which); then the rank's counters are not advanced.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool one_shot_all_reduce(const Block& block, const RankView& view,
                                                   const AllReduceCall<T>& call) {
  BlockCounters& counters = view.state->block[block.block()];
  std::uint32_t counter = counters.barrier_epoch;
  const std::size_t segment = segment_elements(view.layout.staging_bytes, view.blocks, sizeof(T));
  const std::size_t per_round = segment * static_cast<std::size_t>(view.blocks);
  const std::size_t rounds = round_count(call.count, per_round);
  const int divide = call.op == ReduceOp::avg ? view.nranks : 0;
  const std::size_t at = segment * static_cast<std::size_t>(block.block());  // this block's staging segment
  for (std::size_t r = 0; r < rounds; ++r) {
    const Range round = round_range(call.count, per_round, r);
    const Range share = packed_share(round, static_cast<std::size_t>(view.blocks),
                                     static_cast<std::size_t>(block.block()), Pack<T>::kElements);
    ReduceCopyArgs<T> copy_in{{call.input + share.offset}, 1, {staging_of<T>(view, view.rank) + at}, 1, call.op, 0};
    reduce_copy(block, copy_in, share.count);
    if (!flag_barrier(block, view, ++counter)) return false;
    ReduceCopyArgs<T> fold{{}, view.nranks, {call.output + share.offset}, 1, call.op, divide};
    for (int k = 0; k < view.nranks; ++k) fold.sources[k] = staging_of<T>(view, k) + at;
    reduce_copy(block, fold, share.count);
    if (!flag_barrier(block, view, ++counter)) return false;
  }
  block.sync();  // every lane has read the counter before lane 0 moves it on
  if (block.lane() == 0) counters.barrier_epoch = counter;
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
