// One direction of a Simple FIFO between two ranks, seen from one end: the slots live in the receiver's
// memory; the sender raises the receiver's `head` after filling a slot, the receiver raises the sender's
// `tail` after consuming one. `count` is this end's own count (sent or received, ever), kept in RankState
// between calls so calls and graph replays continue it. The wait/post pattern of ring.hpp's Fifo, for
// kernels whose ranks talk to several neighbours (the tree): lane 0 waits, a block barrier publishes the
// outcome, every lane moves data, a block barrier, lane 0 posts.
#pragma once

#include <cstdint>

#include "../../core/config.hpp"
#include "bounded_wait.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

struct EdgeEnd {
  unsigned char* slots;  // the receiver's `depth` slots of this edge
  std::uint32_t* head;   // in the receiver's signals: slots filled, written by the sender
  std::uint32_t* tail;   // in the sender's signals: slots consumed, written by the receiver
  int peer;              // the rank at the other end (for the timeout record)
  std::uint32_t count;   // this end's slots sent (sender) or received (receiver)
};

// The slot this end fills or reads next.
template <class T>
CHORUS_HOST_DEVICE inline T* edge_slot(const EdgeEnd& edge, const ScratchLayout& layout) {
  return reinterpret_cast<T*>(edge.slots + static_cast<std::size_t>(fifo_slot(edge.count, layout.fifo_depth)) * layout.fifo_slot_bytes);
}

// Receiver, lane 0: until the sender has filled slot `count`.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline bool edge_wait_filled(const Block& block, const RankView& view, const EdgeEnd& edge,
                                                std::uint32_t step, WaitKind what) {
  return wait_until_reached(block, view, edge.head, edge.count + 1, edge.peer, step, what);
}

// Sender, lane 0: until slot `count` is free, i.e. the receiver has consumed `count - depth` (wrap-safe: no
// special case for the first `depth` sends, see ring.hpp's fifo_wait).
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline bool edge_wait_free(const Block& block, const RankView& view, const EdgeEnd& edge,
                                              std::uint32_t step, WaitKind what) {
  return wait_until_reached(block, view, edge.tail, edge.count + 1 - static_cast<std::uint32_t>(view.layout.fifo_depth),
                            edge.peer, step, what);
}

// Sender, lane 0, after a block barrier and a system fence that order every lane's data before it.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline void edge_post_filled(const Block& block, const EdgeEnd& edge) {
  block.store_release(edge.head, edge.count + 1);
}

// Receiver, lane 0, after a block barrier that orders every lane's reads before it.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline void edge_post_consumed(const Block& block, const EdgeEnd& edge) {
  block.store_release(edge.tail, edge.count + 1);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
