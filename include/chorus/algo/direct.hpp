// Direct reduce_scatter and all_gather: every rank exchanges with every peer in one step. The
// same traffic as the ring with a single step of latency, when every pair of ranks has a link
// (NVSwitch, shared memory).
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// Rank r reads block r of every peer's input and folds them in rank order into its output. In
// place, the output is this rank's own input block, so (except on rank 0, which reads its own
// block first) the block is copied to scratch before the fold overwrites it.
CHORUS_FUNC Schedule direct_reduce_scatter(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule direct_reduce_scatter(int ranks, std::size_t count, const Options& options) {
  Schedule schedule = make_schedule("direct_reduce_scatter", Collective::reduce_scatter, Pattern::direct, ranks,
                                    count, 0, options);
  const int n = ranks;
  if (options.in_place && n > 1) schedule.scratch_count = count;
  const std::size_t slices = slice_count(count, options.slice);
  const auto block = [count](int rank) { return static_cast<std::size_t>(rank) * count; };
  for (int rank = 0; rank < n; ++rank) {
    StepList list(schedule.steps[rank]);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      for (int k = 1; k < n; ++k) {
        const int peer = mod(rank + k, n);
        list.send(peer, piece.count, input_at(block(peer) + piece.offset));
      }
      Span own = input_at(block(rank) + piece.offset);
      if (options.in_place && rank > 0) {
        list.copy(piece.count, own, scratch_at(piece.offset));
        own = scratch_at(piece.offset);
      }
      fold_in_rank_order(list, rank, n, piece.count, own, output_at(piece.offset));
    }
  }
  link(schedule);
  return schedule;
}
#endif

// Rank r copies its input to output block r and reads every peer's input into their blocks.
CHORUS_FUNC Schedule direct_all_gather(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule direct_all_gather(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("direct_all_gather", Collective::all_gather, Pattern::direct, ranks, count, 0, options);
  const int n = ranks;
  const std::size_t slices = slice_count(count, options.slice);
  const auto block = [count](int rank) { return static_cast<std::size_t>(rank) * count; };
  for (int rank = 0; rank < n; ++rank) {
    StepList list(schedule.steps[rank]);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      list.copy(piece.count, input_at(piece.offset), output_at(block(rank) + piece.offset));  // no-op in place
      for (int k = 1; k < n; ++k) list.send(mod(rank + k, n), piece.count, input_at(piece.offset));
      for (int k = 1; k < n; ++k) {
        const int peer = mod(rank - k, n);
        list.recv_copy(peer, piece.count, output_at(block(peer) + piece.offset));
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
