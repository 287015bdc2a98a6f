// Two-shot all_reduce: reduce-scatter by direct reads (rank c folds chunk c of every peer's staging in
// rank order, as algo::two_shot_all_reduce does) with the result pushed into every rank's result region,
// then each rank copies the gathered result out. Three flag barriers per round: inputs staged, results
// pushed, results read (before the next round overwrites them). The ring's traffic in two steps.
#pragma once

#include "../../core/config.hpp"
#include "all_reduce_call.hpp"
#include "bounded_wait.hpp"
#include "partition.hpp"
#include "reduce_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool two_shot_all_reduce(const Block& block, const RankView& view,
                                                   const AllReduceCall<T>& call) {
  BlockCounters& counters = view.state->block[block.block()];
  std::uint32_t counter = counters.barrier_epoch;
  const std::size_t n = static_cast<std::size_t>(view.nranks);
  constexpr std::size_t per_pack = Pack<T>::kElements;
  // Block b's segment holds its share of all n chunks, each share a whole number of packs but the last.
  const std::size_t segment = segment_elements(view.layout.staging_bytes, view.blocks, sizeof(T));
  const std::size_t per_round = two_shot_round_elements(segment, view.nranks, view.blocks, per_pack);
  const std::size_t rounds = round_count(call.count, per_round);
  const int divide = call.op == ReduceOp::avg ? view.nranks : 0;
  const auto this_block = static_cast<std::size_t>(block.block());  // the lambdas below see plain values only
  const std::size_t base = segment * this_block;
  // Chunk c of a round is owned (reduced) by rank c; block b of every rank handles share b of every chunk,
  // so a block reads only what the same block of its peers wrote before the barrier they shared. The fold
  // is in rank order whatever the chunking, so the bits are algo::two_shot_all_reduce's.
  const auto share_of = [&](Range round, std::size_t chunk) {
    const Range c = packed_share(round, n, chunk, per_pack);
    return packed_share(c, static_cast<std::size_t>(view.blocks), this_block, per_pack);
  };
  const auto segment_at = [&](Range round, std::size_t chunk) {  // where chunk's share sits in the segment
    std::size_t at = base;
    for (std::size_t c = 0; c < chunk; ++c) at += (share_of(round, c).count + per_pack - 1) / per_pack * per_pack;
    return at;
  };
  for (std::size_t r = 0; r < rounds; ++r) {
    const Range round = round_range(call.count, per_round, r);
    for (std::size_t c = 0; c < n; ++c) {
      const Range s = share_of(round, c);
      ReduceCopyArgs<T> copy_in{{call.input + s.offset}, 1, {staging_of<T>(view, view.rank) + segment_at(round, c)}, 1,
                                call.op, 0};
      reduce_copy(block, copy_in, s.count);
    }
    if (!flag_barrier(block, view, ++counter)) return false;
    const std::size_t me = static_cast<std::size_t>(view.rank);
    const Range mine = share_of(round, me);
    const std::size_t mine_at = segment_at(round, me);
    ReduceCopyArgs<T> fold{{}, view.nranks, {}, view.nranks, call.op, divide};
    for (int k = 0; k < view.nranks; ++k) {
      fold.sources[k] = staging_of<T>(view, k) + mine_at;
      fold.destinations[k] = result_of<T>(view, k) + mine_at;
    }
    reduce_copy(block, fold, mine.count);
    if (!flag_barrier(block, view, ++counter)) return false;
    for (std::size_t c = 0; c < n; ++c) {
      const Range s = share_of(round, c);
      ReduceCopyArgs<T> copy_out{{result_of<T>(view, view.rank) + segment_at(round, c)}, 1, {call.output + s.offset}, 1,
                                 call.op, 0};
      reduce_copy(block, copy_out, s.count);
    }
    if (!flag_barrier(block, view, ++counter)) return false;
  }
  block.sync();
  if (block.lane() == 0) counters.barrier_epoch = counter;
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
