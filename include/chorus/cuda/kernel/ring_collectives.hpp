// Ring all_gather and reduce_scatter over the Simple protocol: the gather and the reduce halves of the
// ring all_reduce (ring.hpp: the same FIFO, waits and counters, so calls of all three may follow each
// other on one team), moving whole per-rank blocks as algo::ring_all_gather and algo::ring_reduce_scatter
// do. Block b of every rank takes share b of every rank's block, cut into the same pieces, and moves it
// round its own ring (view.ring(b)); reduce_scatter folds share b in that ring's order.
#pragma once

#include "../../core/config.hpp"
#include "collective_call.hpp"
#include "ring.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// One rank: the input is the output (block 0 of all_gather, the whole of reduce_scatter).
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline void ring_copy_alone(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const Range share = block_share(Range{0, call.count}, view.blocks, block.block());
  reduce_copy(block, ReduceCopyArgs<T>{{call.input + share.offset}, 1, {call.output + share.offset}, 1, call.op, 0},
              share.count);
}

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline void ring_save(const Block& block, BlockCounters& counters, const Fifo<T>& fifo) {
  block.sync();  // every lane has read the counters before lane 0 moves them on
  if (block.lane() == 0) {
    counters.fifo_sent = fifo.sent;
    counters.fifo_received = fifo.received;
  }
}

// Position p sends its own block, then receives position p-1-k's at step k into the output, passing on
// all but the last.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool ring_all_gather(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const int n = view.nranks;
  const int b = block.block();
  if (n == 1) {
    ring_copy_alone(block, view, call);
    return true;
  }
  BlockCounters& counters = view.state->block[b];
  Fifo<T> fifo{view, b, counters, counters.fifo_sent, counters.fifo_received};
  const std::size_t pieces = ring_block_pieces(call.count, view.blocks, b, view.layout.fifo_slot_bytes / sizeof(T));
  const auto block_of = [&](int rank) { return call.output + static_cast<std::size_t>(rank) * call.count; };
  std::uint32_t step = 0;
  for (std::size_t s = 0; s < pieces; ++s) {
    const Range r = ring_block_piece(call.count, view.blocks, b, pieces, s);
    if (!fifo_wait(block, fifo, false, true, step++)) return false;
    ReduceCopyArgs<T> own{{call.input + r.offset}, 1, {fifo.outgoing_slot(), block_of(view.rank) + r.offset}, 2, call.op, 0};
    reduce_copy(block, own, r.count);  // in place, the second destination is the input itself
    fifo_post(block, fifo, false, true);
    for (int k = 0; k < n - 1; ++k, ++step) {
      const int from = fifo.ring().order[ring_gather_block_position(fifo.ring().position, k, n)];
      const bool forward = k < n - 2;
      if (!fifo_wait(block, fifo, true, forward, step)) return false;
      ReduceCopyArgs<T> copy{{fifo.incoming_slot()}, 1, {block_of(from) + r.offset}, 1, call.op, 0};
      if (forward) copy.destinations[copy.destination_count++] = fifo.outgoing_slot();
      reduce_copy(block, copy, r.count);
      fifo_post(block, fifo, true, forward);
    }
  }
  ring_save(block, counters, fifo);
  return true;
}

// Position p sends its input's block of position p-1; at step k it receives the partial of position
// p-2-k's block, folds its own input in after it (received first, as the host's recv_reduce) and passes
// it on; the last step finishes its own block into the output (and divides there for avg).
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool ring_reduce_scatter(const Block& block, const RankView& view,
                                                   const CollectiveCall<T>& call) {
  const int n = view.nranks;
  const int b = block.block();
  if (n == 1) {
    ring_copy_alone(block, view, call);
    return true;
  }
  BlockCounters& counters = view.state->block[b];
  Fifo<T> fifo{view, b, counters, counters.fifo_sent, counters.fifo_received};
  const std::size_t pieces = ring_block_pieces(call.count, view.blocks, b, view.layout.fifo_slot_bytes / sizeof(T));
  const auto input_of = [&](int position) {
    return call.input + static_cast<std::size_t>(fifo.ring().order[position]) * call.count;
  };
  std::uint32_t step = 0;
  for (std::size_t s = 0; s < pieces; ++s) {
    const Range r = ring_block_piece(call.count, view.blocks, b, pieces, s);
    if (!fifo_wait(block, fifo, false, true, step++)) return false;
    const T* first = input_of(ring_scatter_send_position(fifo.ring().position, n)) + r.offset;
    reduce_copy(block, ReduceCopyArgs<T>{{first}, 1, {fifo.outgoing_slot()}, 1, call.op, 0}, r.count);
    fifo_post(block, fifo, false, true);
    for (int k = 0; k < n - 1; ++k, ++step) {
      const bool last = k == n - 2;
      if (!fifo_wait(block, fifo, true, !last, step)) return false;
      const T* own = input_of(ring_scatter_recv_position(fifo.ring().position, k, n)) + r.offset;
      ReduceCopyArgs<T> fold{{fifo.incoming_slot(), own}, 2, {last ? call.output + r.offset : fifo.outgoing_slot()}, 1, call.op,
                             last && call.op == ReduceOp::avg ? n : 0};
      reduce_copy(block, fold, r.count);
      fifo_post(block, fifo, true, !last);
    }
  }
  ring_save(block, counters, fifo);
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
