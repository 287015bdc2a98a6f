// Two-shot all_reduce: a reduce-scatter by direct reads (the owner of chunk c reads chunk c from
// every peer and reduces it), then an all-gather by direct reads. Two communication steps and
// the ring's traffic, so it sits between one_shot and ring. Each chunk is reduced once, by its
// owner, in rank order.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

CHORUS_FUNC Schedule two_shot_all_reduce(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule two_shot_all_reduce(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("two_shot_all_reduce", Collective::all_reduce, Pattern::two_shot, ranks, count, 0, options);
  const int n = ranks;
  const std::size_t parts = static_cast<std::size_t>(n);
  const std::size_t slices = slice_count(chunk_range(count, parts, 0).count, options.slice);
  // In place the owner's chunk is both its contribution and its result; keep a copy of the
  // contribution in scratch (rank 0 reads its own first, before writing, so needs none).
  if (options.in_place && n > 1) schedule.scratch_count = chunk_range(count, parts, 0).count;
  for (int rank = 0; rank < n; ++rank) {
    StepList list(schedule.steps[rank]);
    const auto piece = [&](int chunk, std::size_t s) {
      return slice_of(chunk_range(count, parts, static_cast<std::size_t>(chunk)), slices, s);
    };
    for (std::size_t s = 0; s < slices; ++s) {
      for (int k = 1; k < n; ++k) {  // reduce-scatter: hand each owner its chunk of our input
        const Range r = piece(mod(rank + k, n), s);
        list.send(mod(rank + k, n), r.count, input_at(r.offset));
      }
      const Range mine = piece(rank, s);
      Span own = input_at(mine.offset);
      if (options.in_place && rank > 0) {
        const std::size_t within = mine.offset - chunk_range(count, parts, static_cast<std::size_t>(rank)).offset;
        list.copy(mine.count, own, scratch_at(within));
        own = scratch_at(within);
      }
      fold_in_rank_order(list, rank, n, mine.count, own, output_at(mine.offset));
      for (int k = 1; k < n; ++k) list.send(mod(rank + k, n), mine.count, output_at(mine.offset));
      for (int k = 1; k < n; ++k) {  // all-gather: read every other owner's finished chunk
        const Range r = piece(mod(rank - k, n), s);
        list.recv_copy(mod(rank - k, n), r.count, output_at(r.offset));
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
