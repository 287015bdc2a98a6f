// Pipelined chain broadcast and reduce over the ring's Simple FIFO (ring.hpp), as NCCL runs
// ncclBroadcast/ncclReduce on its ring: the ranks in ring order starting after (reduce) or at (broadcast)
// the root, the buffer streamed through in pieces of at most one slot, so every link is busy at once and a
// large buffer takes about one transfer time plus (n - 1) pieces of latency.
//
// The chain is the ring without its link into the root (broadcast) or out of it (reduce): that link carries
// nothing, so its sender's and receiver's counters stay equal, as on every other link, and a ring call after
// a chain call continues the same FIFOs.
//
// Block b of every rank takes share b of the buffer (ring_block_piece: the same pieces on every rank) and
// chains it along its own ring (view.ring(b)); chain reduce folds share b in that ring's order.
#pragma once

#include "../../core/config.hpp"
#include "collective_call.hpp"
#include "ring.hpp"
#include "ring_collectives.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// How far this rank is from `root` along `ring` (0 at the root, n-1 at the rank before it).
CHORUS_HOST_DEVICE inline int chain_distance(const RingView& ring, int n, int root) {
  int root_position = 0;
  for (int p = 0; p < n; ++p) {
    if (ring.order[p] == root) root_position = p;
  }
  return algo::mod(ring.position - root_position, n);
}

// The root sends its input (and copies it to its output unless in place); every other rank receives into
// its output and forwards to the next, except the last.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool chain_broadcast(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const int n = view.nranks;
  const int b = block.block();
  if (n == 1) {
    ring_copy_alone(block, view, call);
    return true;
  }
  BlockCounters& counters = view.state->block[b];
  Fifo<T> fifo{view, b, counters, counters.fifo_sent, counters.fifo_received};
  const int distance = chain_distance(fifo.ring(), n, call.root);
  const bool root = distance == 0;
  const bool forward = distance < n - 1;
  const std::size_t pieces = ring_block_pieces(call.count, view.blocks, b, view.layout.fifo_slot_bytes / sizeof(T));
  for (std::size_t s = 0; s < pieces; ++s) {
    const Range r = ring_block_piece(call.count, view.blocks, b, pieces, s);
    const auto step = static_cast<std::uint32_t>(s);
    if (!fifo_wait(block, fifo, !root, forward, step)) return false;
    ReduceCopyArgs<T> copy{{root ? call.input + r.offset : fifo.incoming_slot()}, 1, {}, 0, call.op, 0};
    if (!root || call.output != call.input) copy.destinations[copy.destination_count++] = call.output + r.offset;
    if (forward) copy.destinations[copy.destination_count++] = fifo.outgoing_slot();
    reduce_copy(block, copy, r.count);
    fifo_post(block, fifo, !root, forward);
  }
  ring_save(block, counters, fifo);
  return true;
}

// The root's next rank sends its input; each rank after it receives the partial, folds its own input in
// after it (received first, as ring_reduce_scatter and the host's recv_reduce) and passes it on; the root
// folds last into its output (dividing for avg). So the result is
//   ((x[d=1] (+) x[d=2]) (+) ... (+) x[d=n-1]) (+) x[root]        (d: distance from the root along the ring)
// for each block's share, d along that block's ring, the same on every call. The host's chain_reduce
// schedule runs the other way round the ring (x[d=n-1] first), so floats may differ from it in the last
// bits; integers and the order-free ops agree.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool chain_reduce(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const int n = view.nranks;
  const int b = block.block();
  if (n == 1) {
    ring_copy_alone(block, view, call);
    return true;
  }
  BlockCounters& counters = view.state->block[b];
  Fifo<T> fifo{view, b, counters, counters.fifo_sent, counters.fifo_received};
  const int distance = chain_distance(fifo.ring(), n, call.root);
  const bool root = distance == 0;
  const bool first = distance == 1;
  const std::size_t pieces = ring_block_pieces(call.count, view.blocks, b, view.layout.fifo_slot_bytes / sizeof(T));
  for (std::size_t s = 0; s < pieces; ++s) {
    const Range r = ring_block_piece(call.count, view.blocks, b, pieces, s);
    const auto step = static_cast<std::uint32_t>(s);
    if (!fifo_wait(block, fifo, !first, !root, step)) return false;
    ReduceCopyArgs<T> fold{{call.input + r.offset}, 1, {root ? call.output + r.offset : fifo.outgoing_slot()}, 1, call.op,
                           root && call.op == ReduceOp::avg ? n : 0};
    if (!first) {
      fold.sources[0] = fifo.incoming_slot();
      fold.sources[1] = call.input + r.offset;
      fold.source_count = 2;
    }
    reduce_copy(block, fold, r.count);
    fifo_post(block, fifo, !first, !root);
  }
  ring_save(block, counters, fifo);
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
