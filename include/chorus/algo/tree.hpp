// Double binary tree all_reduce (NCCL's construction). Half 0 of the buffer is reduced up tree 0
// to its root and broadcast back down; half 1 does the same on tree 1 at the same time. The two
// trees are built so that a rank with children in one tree is (almost always) a leaf in the
// other, so every rank sends and receives about one buffer in each direction: full bandwidth at
// logarithmic latency.
#pragma once

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <vector>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// Tree 0 over positions 0..n-1: the parent of p clears its lowest set bit b and sets 2b, or, when
// that is out of range, just clears b. So odd positions are leaves, and position 0 is the root
// with one child, the largest power of two below n.
CHORUS_HOST_DEVICE constexpr int btree_parent(int position, int n) {
  if (position == 0) return -1;
  const int bit = position & -position;
  const int up = (position ^ bit) | (bit << 1);
  return up < n ? up : position ^ bit;
}

// Child `which` (0 = lower, 1 = upper) of a position in tree 0, or -1.
CHORUS_HOST_DEVICE constexpr int btree_child(int position, int n, int which) {
  if (position == 0) {
    if (which != 0 || n < 2) return -1;
    int top = 1;
    while (top < n - top) top *= 2;  // top*2 < n without overflow
    return top;
  }
  const int half = (position & -position) >> 1;
  if (half == 0) return -1;
  if (which == 0) return position - half;
  // The upper child is the nearest position + h (h = half, half/2, ...) that exists; the parent
  // rule above sends exactly that one back here.
  for (int h = half; h > 0; h >>= 1) {
    if (position < n - h) return position + h;
  }
  return -1;
}

// Tree 1 is tree 0 relabelled: mirrored (r -> n-1-r) when n is even, shifted by one when n is odd.
CHORUS_HOST_DEVICE constexpr int tree_position(int tree, int rank, int n) {
  if (tree == 0) return rank;
  return n % 2 == 0 ? n - 1 - rank : mod(rank - 1, n);
}
CHORUS_HOST_DEVICE constexpr int tree_rank(int tree, int position, int n) {
  if (tree == 0 || position < 0) return position;
  return n % 2 == 0 ? n - 1 - position : mod(position + 1, n);
}

CHORUS_HOST_DEVICE constexpr int tree_parent(int tree, int rank, int n) {
  return tree_rank(tree, btree_parent(tree_position(tree, rank, n), n), n);
}
CHORUS_HOST_DEVICE constexpr int tree_child(int tree, int rank, int n, int which) {
  return tree_rank(tree, btree_child(tree_position(tree, rank, n), n, which), n);
}
CHORUS_HOST_DEVICE constexpr int tree_root(int tree, int n) { return tree_rank(tree, 0, n); }

// Edges between a rank and its tree's root.
CHORUS_HOST_DEVICE constexpr int tree_depth(int tree, int rank, int n) {
  int depth = 0;
  for (int position = tree_position(tree, rank, n); position != 0; position = btree_parent(position, n)) ++depth;
  return depth;
}

// Reduce up: leaves send their input; an inner rank folds its children's partials into its own
// input (output = (input + child 0) + child 1) and sends that up. Broadcast down: receive the
// result from the parent, pass it to the children. Each element is reduced by one expression
// (at its tree's root) and then copied, so every rank ends with the same bits.
CHORUS_FUNC Schedule tree_all_reduce(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule tree_all_reduce(int ranks, std::size_t count, const Options& options) {
  Schedule schedule =
      make_schedule("tree_all_reduce", Collective::all_reduce, Pattern::tree, ranks, count, 0, options);
  const int n = ranks;
  if (n == 1) {
    StepList(schedule.steps[0]).copy(count, input_at(0), output_at(0));
    link(schedule);
    return schedule;
  }
  const std::size_t slices = slice_count(chunk_range(count, 2, 0).count, options.slice);
  // A rank at depth d handles slice s going up at time s - d and coming down at time s + d: the
  // steady state of the pipeline. Listing each rank's steps in that order keeps every tree busy,
  // and since every wait is for a step of strictly earlier time elsewhere, nothing can deadlock.
  struct Event {
    long long time;
    int down;  // 0 = reduce up, 1 = broadcast down (the root does up before down at equal time)
    int tree;
    std::size_t slice;
  };
  for (int rank = 0; rank < n; ++rank) {
    std::vector<Event> events;
    for (int t = 0; t < 2; ++t) {
      const long long depth = tree_depth(t, rank, n);
      for (std::size_t s = 0; s < slices; ++s) {
        events.push_back(Event{static_cast<long long>(s) - depth, 0, t, s});
        events.push_back(Event{static_cast<long long>(s) + depth, 1, t, s});
      }
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return std::tie(a.time, a.down, a.tree, a.slice) < std::tie(b.time, b.down, b.tree, b.slice);
    });
    StepList list(schedule.steps[rank]);
    for (const Event& e : events) {
      const Range r = slice_of(chunk_range(count, 2, static_cast<std::size_t>(e.tree)), slices, e.slice);
      const int parent = tree_parent(e.tree, rank, n);
      const int children[2] = {tree_child(e.tree, rank, n, 0), tree_child(e.tree, rank, n, 1)};
      if (e.down == 0) {
        if (children[0] < 0) {
          list.send(parent, r.count, input_at(r.offset));  // a leaf is never a root when n > 1
          continue;
        }
        list.recv_reduce(children[0], r.count, input_at(r.offset), output_at(r.offset));
        if (children[1] >= 0) list.recv_reduce(children[1], r.count, output_at(r.offset), output_at(r.offset));
        if (parent >= 0) list.send(parent, r.count, output_at(r.offset));
      } else {
        if (parent >= 0) list.recv_copy(parent, r.count, output_at(r.offset));
        for (const int child : children) {
          if (child >= 0) list.send(child, r.count, output_at(r.offset));
        }
      }
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
