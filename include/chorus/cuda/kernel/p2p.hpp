// Point-to-point transfers over the Simple protocol: block b of a sender pushes its share of each
// transfer, a FIFO slot at a time, into the receiver's memory (the p2p region: a FIFO per block and
// source rank), and block b of the receiver copies each slot out. A filled slot is announced by
// release-storing the filled count into the receiver's p2p_head[b][sender]; a consumed one by
// release-storing the consumed count into the sender's p2p_tail[b][receiver], which frees it. Counters only
// grow and live in RankState, so calls and graph replays continue them (as ring.hpp's FIFO does).
//
// A rank may have several sends and receives in one call (send to the next rank and receive from the
// previous one). Blocking on one of them could wait forever: two ranks sending to each other with full
// FIFOs would each wait for the other to drain. So a block polls: each pass it tries every transfer
// that may move (the first unfinished one per peer, which keeps a pair's transfers in list order) and
// moves a piece of each that is ready; a pass that moves nothing backs off, and past the deadline the
// first stuck transfer is recorded as the timeout (who waited for whom, which piece).
#pragma once

#include "../../core/config.hpp"
#include "bounded_wait.hpp"
#include "p2p_call.hpp"
#include "partition.hpp"
#include "reduce_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// Slot `sequence` of the FIFO that `source` fills at `receiver` for block `block`.
template <class T>
CHORUS_HOST_DEVICE inline T* p2p_slot(const RankView& view, int receiver, int block, int source, std::uint32_t sequence) {
  const ScratchLayout& layout = view.layout;
  const std::size_t fifo = static_cast<std::size_t>(block) * static_cast<std::size_t>(layout.p2p_sources) + static_cast<std::size_t>(source);
  const std::size_t slot = fifo * static_cast<std::size_t>(layout.fifo_depth) + static_cast<std::size_t>(fifo_slot(sequence, layout.fifo_depth));
  return reinterpret_cast<T*>(view.scratch[receiver] + layout.p2p_offset() + slot * layout.fifo_slot_bytes);
}

// What lane 0 saw of the first transfer that could not move in a pass: the timeout's record.
struct P2pStall {
  int peer;
  std::uint32_t piece;
  std::uint32_t expected;
  std::uint32_t seen;
  WaitKind what;
};

// A block's progress through its table: its copies of the FIFO counters and the pieces each entry moved.
struct P2pProgress {
  std::uint32_t sent[kMaxRanks];
  std::uint32_t received[kMaxRanks];
  std::size_t sends_done[kMaxRanks];
  std::size_t recvs_done[kMaxRanks];
};

// Whether entry `i` is the first unfinished one of its peer in `entries` (a pair's transfers go in order).
CHORUS_HOST_DEVICE inline bool first_for_peer(const P2pEntry* entries, const std::size_t* done, const std::size_t* pieces, int i) {
  for (int j = 0; j < i; ++j) {
    if (entries[j].peer == entries[i].peer && done[j] < pieces[j]) return false;
  }
  return true;
}

// Lane 0 reads the counter, the block barrier hands its verdict to every lane; a stall is noted once per pass.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline bool p2p_ready(const Block& block, const std::uint32_t* flag, std::uint32_t target, P2pStall& stall,
                                         bool& stalled, const P2pStall& if_not) {
  bool ready = true;
  if (block.lane() == 0) {
    const std::uint32_t seen = block.load_acquire(flag);
    ready = reached(seen, target);
    if (!ready && !stalled) {
      stall = if_not;
      stall.expected = target;
      stall.seen = seen;
      stalled = true;
    }
  }
  return !block.sync_or(!ready);
}

// Moves this rank's part of one transfer call (block `block()`'s share of every entry). False if a wait
// timed out (the TimeoutRecord says which); then the counters are not advanced.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool p2p(const Block& block, const RankView& view, const P2pTable& table) {
  const int b = block.block();
  const int me = view.rank;
  const std::uint32_t depth = static_cast<std::uint32_t>(view.layout.fifo_depth);
  const std::size_t slot_elements = view.layout.fifo_slot_bytes / sizeof(T);
  P2pCounters& counters = view.state->p2p[b];
  P2pProgress at{};
  std::size_t send_pieces[kMaxRanks] = {};
  std::size_t recv_pieces[kMaxRanks] = {};
  for (int peer = 0; peer < view.nranks; ++peer) {
    at.sent[peer] = counters.sent[peer];
    at.received[peer] = counters.received[peer];
  }
  const auto sent_from = [&](int i) { return static_cast<const T*>(table.sends[i].buffer); };
  // A receive's buffer is the caller's writable recv buffer (the table keeps one pointer type for both).
  const auto received_into = [&](int i) { return static_cast<T*>(const_cast<void*>(table.recvs[i].buffer)); };
  for (int i = 0; i < table.send_count; ++i) {
    send_pieces[i] = table.sends[i].peer == me ? 0 : ring_block_pieces(table.sends[i].count, view.blocks, b, slot_elements);
  }
  // Local copies first: the k-th send to itself feeds the k-th receive from itself; no FIFO, no wait.
  for (int i = 0, k = 0; i < table.recv_count; ++i) {
    if (table.recvs[i].peer != me) {
      recv_pieces[i] = ring_block_pieces(table.recvs[i].count, view.blocks, b, slot_elements);
      continue;
    }
    while (k < table.send_count && table.sends[k].peer != me) ++k;
    const Range share = block_share(Range{0, table.recvs[i].count}, view.blocks, b);
    reduce_copy(block, ReduceCopyArgs<T>{{sent_from(k) + share.offset}, 1, {received_into(i) + share.offset}, 1, ReduceOp::sum, 0},
                share.count);
    ++k;
  }
  const Signals* own = view.signals[me];
  for (std::uint32_t pass = 0;; ++pass) {
    block.delay(view, pass);
    bool pending = false, moved = false, stalled = false;
    P2pStall stall{};
    for (int i = 0; i < table.send_count; ++i) {
      const int to = table.sends[i].peer;
      if (at.sends_done[i] == send_pieces[i]) continue;
      pending = true;
      if (!first_for_peer(table.sends, at.sends_done, send_pieces, i)) continue;
      // Slot `sent` is free once `sent - depth` has been consumed (as in ring.hpp: no special case for the
      // first `depth` sends, which stays right across the wrap).
      const std::uint32_t free_at = at.sent[to] + 1 - depth;
      if (!p2p_ready(block, &own->p2p_tail[b][to], free_at, stall, stalled,
                     P2pStall{to, static_cast<std::uint32_t>(at.sends_done[i]), 0, 0, WaitKind::p2p_free})) {
        continue;
      }
      const Range r = ring_block_piece(table.sends[i].count, view.blocks, b, send_pieces[i], at.sends_done[i]);
      T* slot = p2p_slot<T>(view, to, b, me, at.sent[to]);
      reduce_copy(block, ReduceCopyArgs<T>{{sent_from(i) + r.offset}, 1, {slot}, 1, ReduceOp::sum, 0}, r.count);
      block.sync();  // every lane's part of the slot is written before lane 0 announces it
      if (block.lane() == 0) {
        block.fence_system();
        block.store_release(&view.signals[to]->p2p_head[b][me], at.sent[to] + 1);
      }
      ++at.sent[to];
      ++at.sends_done[i];
      moved = true;
    }
    for (int i = 0; i < table.recv_count; ++i) {
      const int from = table.recvs[i].peer;
      if (at.recvs_done[i] == recv_pieces[i]) continue;
      pending = true;
      if (!first_for_peer(table.recvs, at.recvs_done, recv_pieces, i)) continue;
      const int after = table.recvs[i].after_send;
      if (after >= 0 && at.sends_done[after] <= at.recvs_done[i]) continue;  // in place: that piece has not left yet
      if (!p2p_ready(block, &own->p2p_head[b][from], at.received[from] + 1, stall, stalled,
                     P2pStall{from, static_cast<std::uint32_t>(at.recvs_done[i]), 0, 0, WaitKind::p2p_filled})) {
        continue;
      }
      const Range r = ring_block_piece(table.recvs[i].count, view.blocks, b, recv_pieces[i], at.recvs_done[i]);
      const T* slot = p2p_slot<T>(view, me, b, from, at.received[from]);
      reduce_copy(block, ReduceCopyArgs<T>{{slot}, 1, {received_into(i) + r.offset}, 1, ReduceOp::sum, 0}, r.count);
      block.sync();  // every lane has read the slot before lane 0 frees it
      if (block.lane() == 0) block.store_release(&view.signals[from]->p2p_tail[b][me], at.received[from] + 1);
      ++at.received[from];
      ++at.recvs_done[i];
      moved = true;
    }
    if (!pending) break;
    if (moved) continue;
    // Nothing could move: give up past the deadline (lane 0's clock decides for the block), else back off.
    if (block.sync_or(block.lane() == 0 && block.expired())) {
      if (block.lane() == 0) record_timeout(block, view, stall.peer, stall.piece, stall.expected, stall.seen, stall.what);
      return false;
    }
    block.backoff();
  }
  block.sync();  // every lane has read the counters before lane 0 moves them on
  if (block.lane() == 0) {
    for (int peer = 0; peer < view.nranks; ++peer) {
      counters.sent[peer] = at.sent[peer];
      counters.received[peer] = at.received[peer];
    }
  }
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
