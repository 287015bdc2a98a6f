// One-shot all_reduce: every rank reads the whole buffer from every peer and reduces it itself.
// One communication step (the lowest latency there is) at n-1 times the ring's traffic, so it
// wins for small messages. Every rank folds in rank order 0..n-1, so all compute the same bits.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// In place, peers read this rank's input while it is writing the result over it; so the input is
// first copied to scratch and peers read that copy instead.
CHORUS_FUNC Schedule one_shot_all_reduce(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule one_shot_all_reduce(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("one_shot_all_reduce", Collective::all_reduce, Pattern::one_shot, ranks, count, 0, options);
  const int n = ranks;
  const bool stage = options.in_place && n > 1;
  if (stage) schedule.scratch_count = count;
  const std::size_t slices = slice_count(count, options.slice);
  for (int rank = 0; rank < n; ++rank) {
    StepList list(schedule.steps[rank]);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      Span own = input_at(piece.offset);
      if (stage) {
        list.copy(piece.count, own, scratch_at(piece.offset));
        own = scratch_at(piece.offset);
      }
      for (int k = 1; k < n; ++k) list.send(mod(rank + k, n), piece.count, own);
      fold_in_rank_order(list, rank, n, piece.count, own, output_at(piece.offset));
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
