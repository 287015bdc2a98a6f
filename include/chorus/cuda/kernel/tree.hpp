// Double binary tree all_reduce (NCCL's construction; the tree shapes are algo/tree.hpp's, tree 1 is tree 0
// mirrored for even n, shifted by one for odd n). Half 0 of the buffer (algo::chunk_range(count, 2, 0)) is
// reduced up tree 0 to its root and broadcast back down, half 1 likewise on tree 1.
//
// Every block works on both halves: block b takes share b of each half, cut into pieces of at most one FIFO
// slot, and handles tree 0's piece s, then tree 1's piece s. Splitting the blocks between the trees (as NCCL
// splits its channels) would leave one tree idle with an odd or single block count; doing both keeps every
// block's links in both trees busy, and since a rank inner in one tree is a leaf in the other, each block
// sends and receives about one share in each direction either way.
//
// Transport: per block, per tree and per link (child 0, child 1, parent) a Simple FIFO in each direction
// (edge_fifo.hpp), slots in the receiver's tree region of scratch, counters in the tree's own Signals and
// RankState fields (so a ring call in between, or a graph replay, never disturbs them).
//
// Order, as NCCL's runTreeUpDown: every piece up (both trees), then every piece down. Deadlock-free with any
// FIFO depth >= 1: every rank walks the same sequence of events (phase, piece, tree); within one event a rank
// waits only on its children (up) or its parent (down), which do not wait on it in that event, and a wait for
// a free slot is for an event `depth` pieces earlier. By induction on the event, nothing waits forever.
// With both trees interleaved per piece, the two trees' dependencies already pace every link (removing the
// free-slot waits left every twin test green, under ThreadSanitizer too); they stay, as the FIFO's own
// guarantee, which a change to the event order (say, blocks split between the trees) would need.
//
// Fold order: an inner rank computes (child 0's partial (+) its own input) (+) child 1's partial, in one pass,
// and the root divides for avg; the root's result is then only copied, so every rank ends with the root's
// bits. For sum and prod that is the host schedule's (algo::tree_all_reduce: child 1 (+) (child 0 (+) input),
// the same bits as the operations commute); min and max pick the same value.
#pragma once

#include "../../algo/tree.hpp"
#include "../../core/config.hpp"
#include "all_reduce_call.hpp"
#include "edge_fifo.hpp"
#include "partition.hpp"
#include "reduce_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// Pieces: every rank and both trees take the same number of steps, so the count comes from the larger half
// (half 0) and each half's share is cut into that many near-equal pieces, each within a slot.
CHORUS_HOST_DEVICE constexpr std::size_t tree_pieces(std::size_t count, int blocks, int block, std::size_t slot_elements) {
  return algo::slice_count(block_share(algo::chunk_range(count, kTrees, 0), blocks, block).count, slot_elements);
}
CHORUS_HOST_DEVICE constexpr Range tree_piece(std::size_t count, int blocks, int block, int tree, std::size_t pieces,
                                              std::size_t piece) {
  return algo::slice_of(block_share(algo::chunk_range(count, kTrees, static_cast<std::size_t>(tree)), blocks, block), pieces,
                        piece);
}

// The slots of `rank`'s incoming FIFO on `link` of `tree`, block `block`.
CHORUS_HOST_DEVICE inline unsigned char* tree_slots(const RankView& view, int rank, int block, int tree, int link) {
  const std::size_t fifo = view.layout.fifo_slot_bytes * static_cast<std::size_t>(view.layout.fifo_depth);
  const auto index = (static_cast<std::size_t>(block) * kTrees + static_cast<std::size_t>(tree)) * kTreeLinks +
                     static_cast<std::size_t>(link);
  return view.scratch[rank] + view.layout.tree_offset() + index * fifo;
}

// One tree as block `block` of this rank sees it: the neighbours and both directions of every link.
struct TreeEdges {
  int parent;    // -1 at the root
  int children;  // 0, 1 or 2 (a child 1 only ever comes with a child 0)
  EdgeEnd up_in[2];
  EdgeEnd up_out;
  EdgeEnd down_in;
  EdgeEnd down_out[2];
};

CHORUS_HOST_DEVICE inline TreeEdges tree_edges(const RankView& view, int block, int tree, const TreeCounters& counters) {
  const int n = view.nranks;
  const int me = view.rank;
  Signals* own = view.signals[me];
  TreeEdges edges{};
  edges.parent = algo::tree_parent(tree, me, n);
  for (int c = 0; c < 2; ++c) {
    const int child = algo::tree_child(tree, me, n, c);
    if (child < 0) break;
    edges.children = c + 1;
    Signals* theirs = view.signals[child];
    edges.up_in[c] = EdgeEnd{tree_slots(view, me, block, tree, c), &own->tree_head[block][tree][c],
                             &theirs->tree_tail[block][tree][kTreeParentLink], child, counters.received[tree][c]};
    edges.down_out[c] = EdgeEnd{tree_slots(view, child, block, tree, kTreeParentLink), &theirs->tree_head[block][tree][kTreeParentLink],
                                &own->tree_tail[block][tree][c], child, counters.sent[tree][c]};
  }
  if (edges.parent >= 0) {
    const int p = edges.parent;
    const int link = algo::tree_child(tree, p, n, 0) == me ? 0 : 1;  // which child of the parent this rank is
    Signals* theirs = view.signals[p];
    edges.up_out = EdgeEnd{tree_slots(view, p, block, tree, link), &theirs->tree_head[block][tree][link],
                           &own->tree_tail[block][tree][kTreeParentLink], p, counters.sent[tree][kTreeParentLink]};
    edges.down_in = EdgeEnd{tree_slots(view, me, block, tree, kTreeParentLink), &own->tree_head[block][tree][kTreeParentLink],
                            &theirs->tree_tail[block][tree][link], p, counters.received[tree][kTreeParentLink]};
  }
  return edges;
}

CHORUS_HOST_DEVICE inline void tree_save(const TreeEdges& edges, int tree, TreeCounters& counters) {
  for (int c = 0; c < edges.children; ++c) {
    counters.received[tree][c] = edges.up_in[c].count;
    counters.sent[tree][c] = edges.down_out[c].count;
  }
  if (edges.parent >= 0) {
    counters.sent[tree][kTreeParentLink] = edges.up_out.count;
    counters.received[tree][kTreeParentLink] = edges.down_in.count;
  }
}

// Reduce up, one piece: fold the children's partials with this rank's input into the parent's slot (the
// root: into its output, divided for avg).
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool tree_up(const Block& block, const RankView& view, const AllReduceCall<T>& call,
                                       TreeEdges& edges, Range r, std::uint32_t step) {
  bool ok = true;
  if (block.lane() == 0) {
    for (int c = 0; c < edges.children && ok; ++c) ok = edge_wait_filled(block, view, edges.up_in[c], step, WaitKind::tree_up_filled);
    if (ok && edges.parent >= 0) ok = edge_wait_free(block, view, edges.up_out, step, WaitKind::tree_up_free);
  }
  if (block.sync_or(!ok)) return false;
  const bool root = edges.parent < 0;
  ReduceCopyArgs<T> fold{{call.input + r.offset}, 1, {root ? call.output + r.offset : edge_slot<T>(edges.up_out, view.layout)}, 1,
                         call.op, root && call.op == ReduceOp::avg ? view.nranks : 0};
  if (edges.children > 0) {
    fold.sources[0] = edge_slot<T>(edges.up_in[0], view.layout);
    fold.sources[1] = call.input + r.offset;
    fold.source_count = 2;
  }
  if (edges.children > 1) fold.sources[fold.source_count++] = edge_slot<T>(edges.up_in[1], view.layout);
  reduce_copy(block, fold, r.count);
  block.sync();
  if (block.lane() == 0) {
    if (!root) {
      block.fence_system();
      edge_post_filled(block, edges.up_out);
    }
    for (int c = 0; c < edges.children; ++c) edge_post_consumed(block, edges.up_in[c]);
  }
  if (!root) ++edges.up_out.count;
  for (int c = 0; c < edges.children; ++c) ++edges.up_in[c].count;
  return true;
}

// Broadcast down, one piece: the parent's result into the output and on to the children (the root sends its
// output, written in the up phase by this block).
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool tree_down(const Block& block, const RankView& view, const AllReduceCall<T>& call,
                                         TreeEdges& edges, Range r, std::uint32_t step) {
  const bool root = edges.parent < 0;
  bool ok = true;
  if (block.lane() == 0) {
    if (!root) ok = edge_wait_filled(block, view, edges.down_in, step, WaitKind::tree_down_filled);
    for (int c = 0; c < edges.children && ok; ++c) ok = edge_wait_free(block, view, edges.down_out[c], step, WaitKind::tree_down_free);
  }
  if (block.sync_or(!ok)) return false;
  ReduceCopyArgs<T> copy{{root ? call.output + r.offset : edge_slot<T>(edges.down_in, view.layout)}, 1, {}, 0, call.op, 0};
  if (!root) copy.destinations[copy.destination_count++] = call.output + r.offset;
  for (int c = 0; c < edges.children; ++c) copy.destinations[copy.destination_count++] = edge_slot<T>(edges.down_out[c], view.layout);
  reduce_copy(block, copy, r.count);
  block.sync();
  if (block.lane() == 0) {
    if (edges.children > 0) block.fence_system();
    for (int c = 0; c < edges.children; ++c) edge_post_filled(block, edges.down_out[c]);
    if (!root) edge_post_consumed(block, edges.down_in);
  }
  for (int c = 0; c < edges.children; ++c) ++edges.down_out[c].count;
  if (!root) ++edges.down_in.count;
  return true;
}

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool tree_all_reduce(const Block& block, const RankView& view, const AllReduceCall<T>& call) {
  const int b = block.block();
  if (view.nranks == 1) {
    const Range share = block_share(Range{0, call.count}, view.blocks, b);
    reduce_copy(block, ReduceCopyArgs<T>{{call.input + share.offset}, 1, {call.output + share.offset}, 1, call.op, 0}, share.count);
    return true;
  }
  TreeCounters& counters = view.state->tree[b];
  TreeEdges edges[kTrees] = {tree_edges(view, b, 0, counters), tree_edges(view, b, 1, counters)};
  const std::size_t pieces = tree_pieces(call.count, view.blocks, b, view.layout.fifo_slot_bytes / sizeof(T));
  std::uint32_t step = 0;
  for (int down = 0; down < 2; ++down) {
    for (std::size_t s = 0; s < pieces; ++s) {
      for (int t = 0; t < kTrees; ++t, ++step) {
        const Range r = tree_piece(call.count, view.blocks, b, t, pieces, s);
        const bool ok = down == 0 ? tree_up(block, view, call, edges[t], r, step) : tree_down(block, view, call, edges[t], r, step);
        if (!ok) return false;
      }
    }
  }
  block.sync();  // every lane has read the counters before lane 0 moves them on
  if (block.lane() == 0) {
    for (int t = 0; t < kTrees; ++t) tree_save(edges[t], t, counters);
  }
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
