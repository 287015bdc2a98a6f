// Pairwise-exchange all_to_all: n steps; in step k rank r swaps blocks with rank (k - r) mod n.
// That pairing is symmetric (r's partner's partner is r), so each step is a set of disjoint
// swaps, and the one rank paired with itself copies its own block.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

CHORUS_HOST_DEVICE constexpr int pairwise_partner(int rank, int step, int n) { return mod(step - rank, n); }

// In place, the block sent to q is also where q's block arrives; a zero-copy receive cannot
// overwrite it before q has read it, and q is waiting the same way, so the outgoing block is
// first copied to scratch. Two scratch blocks alternate so one step's copy need not wait for the
// previous partner to finish reading.
CHORUS_FUNC Schedule pairwise_all_to_all(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule pairwise_all_to_all(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("pairwise_all_to_all", Collective::all_to_all, Pattern::pairwise, ranks, count, 0, options);
  const int n = ranks;
  const bool stage = options.in_place && n > 1;
  if (stage) schedule.scratch_count = 2 * count;
  const std::size_t slices = slice_count(count, options.slice);
  for (int rank = 0; rank < n; ++rank) {
    StepList list(schedule.steps[rank]);
    for (int step = 0; step < n; ++step) {  // all ranks in the same order, or swaps would not pair up
      const int peer = pairwise_partner(rank, step, n);
      const std::size_t block = static_cast<std::size_t>(peer) * count;
      for (std::size_t s = 0; s < slices; ++s) {
        const Range piece = slice_of(Range{0, count}, slices, s);
        Span src = input_at(block + piece.offset);
        if (peer == rank) {
          list.copy(piece.count, src, output_at(block + piece.offset));  // no-op in place
          continue;
        }
        if (stage) {
          const Span staged = scratch_at(static_cast<std::size_t>(step % 2) * count + piece.offset);
          list.copy(piece.count, src, staged);
          src = staged;
        }
        list.send(peer, piece.count, src);
      }
      if (peer == rank) continue;
      for (std::size_t s = 0; s < slices; ++s) {
        const Range piece = slice_of(Range{0, count}, slices, s);
        list.recv_copy(peer, piece.count, output_at(block + piece.offset));
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
