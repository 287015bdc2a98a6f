// Ring schedules: all_reduce (reduce-scatter, then all-gather), reduce_scatter and all_gather.
// Ranks sit on a ring (Options::ring_order) and each talks only to its two neighbours, so every
// link carries the same load: all_reduce moves 2(n-1)/n of the buffer per rank, the minimum.
// The buffer is cut into n chunks, one per ring position, and each chunk into slices that follow
// each other around the ring (pipelining).
#pragma once

#include <algorithm>
#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// Index arithmetic of the ring, shared with device kernels. Chunks are numbered by ring position.
// Reduce-scatter step k (0..n-2): position p sends chunk p-k and receives chunk p-k-1; after the
// last step it owns the finished chunk p+1. All-gather step k: it sends chunk p+1-k and receives
// chunk p-k.
CHORUS_HOST_DEVICE constexpr int ring_reduce_send_chunk(int position, int step, int n) {
  return mod(position - step, n);
}
CHORUS_HOST_DEVICE constexpr int ring_reduce_recv_chunk(int position, int step, int n) {
  return mod(position - step - 1, n);
}
CHORUS_HOST_DEVICE constexpr int ring_gather_send_chunk(int position, int step, int n) {
  return mod(position + 1 - step, n);
}
CHORUS_HOST_DEVICE constexpr int ring_gather_recv_chunk(int position, int step, int n) {
  return mod(position - step, n);
}

// Zero-copy form: partial sums live in the output chunk they will finish in, and each rank sends
// straight out of its input or output, so no scratch is needed.
CHORUS_FUNC Schedule ring_all_reduce(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule ring_all_reduce(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("ring_all_reduce", Collective::all_reduce, Pattern::ring, ranks, count, 0, options);
  const Ring ring("ring_all_reduce", ranks, options.ring_order);
  const int n = ranks;
  if (n == 1) {
    StepList(schedule.steps[0]).copy(count, input_at(0), output_at(0));
    link(schedule);
    return schedule;
  }
  const std::size_t slices = slice_count(chunk_range(count, n, 0).count, options.slice);
  const auto piece = [&](int chunk, std::size_t s) { return slice_of(chunk_range(count, n, chunk), slices, s); };
  for (int p = 0; p < n; ++p) {
    StepList list(schedule.steps[ring.rank_at(p)]);
    const int next = ring.rank_at(p + 1);
    const int prev = ring.rank_at(p - 1);
    for (std::size_t s = 0; s < slices; ++s) {
      Range r = piece(ring_reduce_send_chunk(p, 0, n), s);
      list.send(next, r.count, input_at(r.offset));
      for (int k = 0; k < n - 1; ++k) {
        // Own input + the partial from prev lands in output; pass it on. After the last step
        // the chunk is finished and this send is the first of the all-gather.
        r = piece(ring_reduce_recv_chunk(p, k, n), s);
        list.recv_reduce(prev, r.count, input_at(r.offset), output_at(r.offset));
        list.send(next, r.count, output_at(r.offset));
      }
      for (int k = 0; k < n - 1; ++k) {
        r = piece(ring_gather_recv_chunk(p, k, n), s);
        list.recv_copy(prev, r.count, output_at(r.offset));
        if (k < n - 2) list.send(next, r.count, output_at(r.offset));  // the last one is back home
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

// Block b of the input (count elements at b*count) is reduced into rank b's output. The block
// owned by position q starts at position q+1 and travels once round the ring. Partial sums
// alternate between two scratch blocks so a rank can write the next partial while its neighbour
// still reads the previous one.
CHORUS_FUNC Schedule ring_reduce_scatter(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule ring_reduce_scatter(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("ring_reduce_scatter", Collective::reduce_scatter, Pattern::ring, ranks, count, 0, options);
  const Ring ring("ring_reduce_scatter", ranks, options.ring_order);
  const int n = ranks;
  if (n == 1) {
    StepList(schedule.steps[0]).copy(count, input_at(0), output_at(0));
    link(schedule);
    return schedule;
  }
  schedule.scratch_count = static_cast<std::size_t>(std::min(n - 2, 2)) * count;
  const std::size_t slices = slice_count(count, options.slice);
  for (int p = 0; p < n; ++p) {
    StepList list(schedule.steps[ring.rank_at(p)]);
    const int next = ring.rank_at(p + 1);
    const int prev = ring.rank_at(p - 1);
    const auto block = [&](int position) { return static_cast<std::size_t>(ring.rank_at(position)) * count; };
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      list.send(next, piece.count, input_at(block(p - 1) + piece.offset));
      for (int k = 0; k < n - 1; ++k) {
        const Span own = input_at(block(p - 2 - k) + piece.offset);
        if (k == n - 2) {  // block p - n == p: this rank's own, finished
          list.recv_reduce(prev, piece.count, own, output_at(piece.offset));
        } else {
          const Span partial = scratch_at(static_cast<std::size_t>(k % 2) * count + piece.offset);
          list.recv_reduce(prev, piece.count, own, partial);
          list.send(next, piece.count, partial);
        }
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

// Every block travels once round the ring, forwarded straight out of the output.
CHORUS_FUNC Schedule ring_all_gather(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule ring_all_gather(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("ring_all_gather", Collective::all_gather, Pattern::ring, ranks, count, 0, options);
  const Ring ring("ring_all_gather", ranks, options.ring_order);
  const int n = ranks;
  const std::size_t slices = slice_count(count, options.slice);
  for (int p = 0; p < n; ++p) {
    const int rank = ring.rank_at(p);
    StepList list(schedule.steps[rank]);
    const int next = ring.rank_at(p + 1);
    const int prev = ring.rank_at(p - 1);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      // Copy first: in place it is a no-op, and it then precedes every send of that memory.
      list.copy(piece.count, input_at(piece.offset), output_at(static_cast<std::size_t>(rank) * count + piece.offset));
      if (n == 1) continue;
      list.send(next, piece.count, input_at(piece.offset));
      for (int k = 0; k < n - 1; ++k) {
        const Span dst = output_at(static_cast<std::size_t>(ring.rank_at(p - 1 - k)) * count + piece.offset);
        list.recv_copy(prev, piece.count, dst);
        if (k < n - 2) list.send(next, piece.count, dst);
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
