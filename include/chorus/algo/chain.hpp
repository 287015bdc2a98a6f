// Pipelined chain broadcast and reduce: the ranks form a chain that starts at the root and follows
// the ring order. The buffer is cut into slices that stream along the chain one after another,
// so for large buffers every link is busy at once and the time approaches one buffer transfer.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// The root copies each slice to its output and sends it on; every other rank receives it into
// its output and forwards it from there (non-roots never read their input).
CHORUS_FUNC Schedule chain_broadcast(int ranks, std::size_t count, int root, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule chain_broadcast(int ranks, std::size_t count, int root, const Options& options) {
  Schedule schedule =
      make_schedule("chain_broadcast", Collective::broadcast, Pattern::chain, ranks, count, root, options);
  const Ring ring("chain_broadcast", ranks, options.ring_order);
  const int n = ranks;
  const int start = ring.position_of(root);
  const std::size_t slices = slice_count(count, options.slice);
  for (int i = 0; i < n; ++i) {  // i = distance from the root along the chain
    StepList list(schedule.steps[ring.rank_at(start + i)]);
    const int prev = ring.rank_at(start + i - 1);
    const int next = ring.rank_at(start + i + 1);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      if (i == 0) {
        list.copy(piece.count, input_at(piece.offset), output_at(piece.offset));  // no-op in place
      } else {
        list.recv_copy(prev, piece.count, output_at(piece.offset));
      }
      if (i < n - 1) list.send(next, piece.count, output_at(piece.offset));
    }
  }
  link(schedule);
  return schedule;
}
#endif

// Partial sums flow from the far end of the chain back to the root. Non-roots keep them in
// scratch (they never write their output); the root adds the last partial to its own input.
CHORUS_FUNC Schedule chain_reduce(int ranks, std::size_t count, int root, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule chain_reduce(int ranks, std::size_t count, int root, const Options& options) {
  Schedule schedule = make_schedule("chain_reduce", Collective::reduce, Pattern::chain, ranks, count, root, options);
  const Ring ring("chain_reduce", ranks, options.ring_order);
  const int n = ranks;
  const int start = ring.position_of(root);
  if (n > 2) schedule.scratch_count = count;
  const std::size_t slices = slice_count(count, options.slice);
  for (int i = 0; i < n; ++i) {
    StepList list(schedule.steps[ring.rank_at(start + i)]);
    const int toward_root = ring.rank_at(start + i - 1);
    const int away = ring.rank_at(start + i + 1);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      const Span own = input_at(piece.offset);
      if (n == 1) {
        list.copy(piece.count, own, output_at(piece.offset));
      } else if (i == 0) {
        list.recv_reduce(away, piece.count, own, output_at(piece.offset));
      } else if (i == n - 1) {
        list.send(toward_root, piece.count, own);
      } else {
        list.recv_reduce(away, piece.count, own, scratch_at(piece.offset));
        list.send(toward_root, piece.count, scratch_at(piece.offset));
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
