// Ring all_reduce over the Simple protocol: each block is a channel with its own FIFO of `fifo_depth`
// slots in the next rank's memory. A step fills a slot (every lane writes, block barrier, one lane
// fences and release-stores the filled count into the receiver's fifo_head) and consumes one (one lane
// acquires fifo_head, block barrier, every lane reads; then the consumed count is released into the
// sender's fifo_tail, which frees the slot). Counters only grow and live in RankState, so calls and
// graph replays continue them.
//
// Chunks, their order round the ring and the reduce/gather steps are algo::ring_all_reduce's (the same
// chunk_range, the same ring_reduce_*/ring_gather_* arithmetic). Block b takes share b of every chunk and
// runs on its own ring (view.ring(b): block b of every rank on the same one), so a block's ring is
// self-contained: share b is folded in that ring's order, the bits of the host's ring all_reduce over
// that order (with one ring for all blocks, the host's for the whole buffer). Every rank still holds
// identical bits: the all-gather half copies each chunk's one reduced result from its owner.
#pragma once

#include "../../algo/ring.hpp"
#include "../../core/config.hpp"
#include "all_reduce_call.hpp"
#include "bounded_wait.hpp"
#include "partition.hpp"
#include "reduce_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

template <class T>
struct Fifo {
  const RankView& view;
  int block;
  BlockCounters& counters;
  std::uint32_t sent;
  std::uint32_t received;

  CHORUS_HOST_DEVICE const RingView& ring() const { return view.ring(block); }
  CHORUS_HOST_DEVICE unsigned char* region(int rank) const {
    return view.scratch[rank] + view.layout.fifo_offset() +
           static_cast<std::size_t>(block) * view.layout.fifo_slot_bytes * static_cast<std::size_t>(view.layout.fifo_depth);
  }
  CHORUS_HOST_DEVICE T* outgoing_slot() const {  // the slot `sent` in the next rank's FIFO
    return reinterpret_cast<T*>(region(ring().next) +
                                static_cast<std::size_t>(fifo_slot(sent, view.layout.fifo_depth)) * view.layout.fifo_slot_bytes);
  }
  CHORUS_HOST_DEVICE const T* incoming_slot() const {  // the slot `received` in this rank's FIFO
    return reinterpret_cast<const T*>(region(view.rank) + static_cast<std::size_t>(fifo_slot(received, view.layout.fifo_depth)) *
                                                               view.layout.fifo_slot_bytes);
  }
};

// Waits (lane 0) for what the step needs: a filled incoming slot, a free outgoing slot; then the block
// barrier publishes it to every lane. False on every lane if lane 0 timed out.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool fifo_wait(const Block& block, const Fifo<T>& fifo, bool incoming, bool outgoing,
                                         std::uint32_t step) {
  bool ok = true;
  if (block.lane() == 0) {
    const Signals* own = fifo.view.signals[fifo.view.rank];
    if (incoming) {
      ok = wait_until_reached(block, fifo.view, &own->fifo_head[fifo.block], fifo.received + 1, fifo.ring().prev, step,
                              WaitKind::fifo_filled);
    }
    // Slot `sent` is free once `sent - depth` has been consumed. No special case for the first `depth`
    // sends: the target is then "negative" and the fresh tail has reached it; a `sent >= depth` test
    // would wrongly skip the wait each time the counter wraps (ThreadSanitizer caught that on the twin).
    if (ok && outgoing) {
      ok = wait_until_reached(block, fifo.view, &own->fifo_tail[fifo.block],
                              fifo.sent + 1 - static_cast<std::uint32_t>(fifo.view.layout.fifo_depth), fifo.ring().next,
                              step, WaitKind::fifo_free);
    }
  }
  return !block.sync_or(!ok);
}

// After every lane has written the outgoing slot and read the incoming one: lane 0 tells the neighbours.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline void fifo_post(const Block& block, Fifo<T>& fifo, bool incoming, bool outgoing) {
  block.sync();
  if (block.lane() == 0) {
    if (outgoing) {
      block.fence_system();
      block.store_release(&fifo.view.signals[fifo.ring().next]->fifo_head[fifo.block], fifo.sent + 1);
    }
    if (incoming) block.store_release(&fifo.view.signals[fifo.ring().prev]->fifo_tail[fifo.block], fifo.received + 1);
  }
  if (outgoing) ++fifo.sent;
  if (incoming) ++fifo.received;
}

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool ring_all_reduce(const Block& block, const RankView& view, const AllReduceCall<T>& call) {
  const int n = view.nranks;
  const int b = block.block();
  BlockCounters& counters = view.state->block[b];
  if (n == 1) {
    const Range share = block_share(Range{0, call.count}, view.blocks, b);
    ReduceCopyArgs<T> copy{{call.input + share.offset}, 1, {call.output + share.offset}, 1, call.op, 0};
    reduce_copy(block, copy, share.count);
    return true;
  }
  Fifo<T> fifo{view, b, counters, counters.fifo_sent, counters.fifo_received};
  const std::size_t slot_elements = view.layout.fifo_slot_bytes / sizeof(T);
  const std::size_t pieces = ring_pieces(call.count, n, view.blocks, b, slot_elements);
  const int p = fifo.ring().position;
  std::uint32_t step = 0;
  for (std::size_t s = 0; s < pieces; ++s) {
    const auto piece = [&](int chunk) { return ring_piece(call.count, n, view.blocks, b, chunk, pieces, s); };
    // Reduce-scatter step 0 sends this rank's own chunk.
    Range r = piece(algo::ring_reduce_send_chunk(p, 0, n));
    if (!fifo_wait(block, fifo, false, true, step)) return false;
    reduce_copy(block, ReduceCopyArgs<T>{{call.input + r.offset}, 1, {fifo.outgoing_slot()}, 1, call.op, 0}, r.count);
    fifo_post(block, fifo, false, true);
    ++step;
    // Then n-1 receives, each folded with this rank's input and passed on; the last finishes the chunk,
    // which goes to the output and, as the all-gather's first send, to the next rank.
    for (int k = 0; k < n - 1; ++k, ++step) {
      r = piece(algo::ring_reduce_recv_chunk(p, k, n));
      if (!fifo_wait(block, fifo, true, true, step)) return false;
      ReduceCopyArgs<T> fold{{fifo.incoming_slot(), call.input + r.offset}, 2, {fifo.outgoing_slot()}, 1, call.op, 0};
      if (k == n - 2) fold.destinations[fold.destination_count++] = call.output + r.offset;
      reduce_copy(block, fold, r.count);
      fifo_post(block, fifo, true, true);
    }
    // All-gather: n-1 receives into the output, all but the last passed on.
    for (int k = 0; k < n - 1; ++k, ++step) {
      r = piece(algo::ring_gather_recv_chunk(p, k, n));
      const bool forward = k < n - 2;
      if (!fifo_wait(block, fifo, true, forward, step)) return false;
      ReduceCopyArgs<T> copy{{fifo.incoming_slot()}, 1, {call.output + r.offset}, 1, call.op, 0};
      if (forward) copy.destinations[copy.destination_count++] = fifo.outgoing_slot();
      reduce_copy(block, copy, r.count);
      fifo_post(block, fifo, true, forward);
    }
  }
  if (call.op == ReduceOp::avg) {  // every rank holds the same sums; each divides its own output
    block.sync();
    for (int chunk = 0; chunk < n; ++chunk) {
      for (std::size_t s = 0; s < pieces; ++s) {
        const Range r = ring_piece(call.count, n, view.blocks, b, chunk, pieces, s);
        reduce_copy(block, ReduceCopyArgs<T>{{call.output + r.offset}, 1, {call.output + r.offset}, 1, call.op, n}, r.count);
      }
    }
  }
  block.sync();
  if (block.lane() == 0) {
    counters.fifo_sent = fifo.sent;
    counters.fifo_received = fifo.received;
  }
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
