// Binomial-tree broadcast and reduce rooted at any rank: ceil(log2 n) rounds, in each of which
// every rank that has the data passes it to one more rank. Lowest latency for small buffers;
// slices pipeline down (or up) the tree for larger ones.
#pragma once

#include <cstddef>
#include <vector>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// Ranks are numbered relative to the root, v = (rank - root) mod n. The parent of v clears its
// highest set bit; the children of v are v + d for every power of two d above v (d >= 1 for the
// root) with v + d < n.
CHORUS_HOST_DEVICE constexpr int binomial_parent(int v) {
  if (v == 0) return -1;
  int top = 1;
  while (top <= v - top) top *= 2;  // highest set bit of v
  return v - top;
}
// The distance to v's nearest child; the others are at 2d, 4d, ... The nearest child heads the
// largest subtree (for the root: child 1 heads every odd relative rank).
CHORUS_HOST_DEVICE constexpr int binomial_first_child_distance(int v) {
  int d = 1;
  while (d <= v) d *= 2;
  return d;
}

// v's children, nearest (largest subtree) first.
inline std::vector<int> binomial_children(int v, int n) {
  std::vector<int> children;
  for (long long d = binomial_first_child_distance(v); d < n - v; d *= 2) children.push_back(v + static_cast<int>(d));
  return children;
}

// The root copies each slice into its output and sends it; the others receive into output and
// forward. Sends do not wait, so their order only decides which child may start first.
CHORUS_FUNC Schedule binomial_broadcast(int ranks, std::size_t count, int root, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule binomial_broadcast(int ranks, std::size_t count, int root, const Options& options) {
  Schedule schedule =
      make_schedule("binomial_broadcast", Collective::broadcast, Pattern::binomial, ranks, count, root, options);
  const int n = ranks;
  const std::size_t slices = slice_count(count, options.slice);
  for (int v = 0; v < n; ++v) {
    StepList list(schedule.steps[mod(v + root, n)]);
    const std::vector<int> children = binomial_children(v, n);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      if (v == 0) {
        list.copy(piece.count, input_at(piece.offset), output_at(piece.offset));  // no-op in place
      } else {
        list.recv_copy(mod(binomial_parent(v) + root, n), piece.count, output_at(piece.offset));
      }
      for (auto child = children.rbegin(); child != children.rend(); ++child) {
        list.send(mod(*child + root, n), piece.count, output_at(piece.offset));
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

// Each rank folds its children's partials, farthest child first (it heads the smallest subtree,
// so its partial is ready first; nearest-first would put the rounds of every subtree in series), into its
// own input, in scratch on non-roots and in output on the root, and sends the result up.
CHORUS_FUNC Schedule binomial_reduce(int ranks, std::size_t count, int root, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule binomial_reduce(int ranks, std::size_t count, int root, const Options& options) {
  Schedule schedule =
      make_schedule("binomial_reduce", Collective::reduce, Pattern::binomial, ranks, count, root, options);
  const int n = ranks;
  if (n > 3) schedule.scratch_count = count;  // relative rank 1 (child 3) is the first non-root with a child
  const std::size_t slices = slice_count(count, options.slice);
  for (int v = 0; v < n; ++v) {
    StepList list(schedule.steps[mod(v + root, n)]);
    const std::vector<int> children = binomial_children(v, n);
    for (std::size_t s = 0; s < slices; ++s) {
      const Range piece = slice_of(Range{0, count}, slices, s);
      const Span acc = v == 0 ? output_at(piece.offset) : scratch_at(piece.offset);
      Span partial = input_at(piece.offset);  // where this rank's sum so far lives
      for (auto child = children.rbegin(); child != children.rend(); ++child) {
        list.recv_reduce(mod(*child + root, n), piece.count, partial, acc);
        partial = acc;
      }
      if (v == 0) {
        if (partial.buffer == Buffer::input) list.copy(piece.count, partial, acc);  // no children: n == 1
      } else {
        list.send(mod(binomial_parent(v) + root, n), piece.count, partial);
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
