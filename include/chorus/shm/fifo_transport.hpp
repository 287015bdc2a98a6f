// The step interpreter's transport over the segment's FIFOs (runtime/interpreter.hpp).
//
//   send      queues the step and returns at once (the interpreter requires that sends never wait
//             for their receiver); queued sends are copied into the FIFO to their peer whenever it has
//             a free slot, inside every wait of this call, so two ranks sending to each other with
//             full FIFOs still make progress.
//   receive   waits for the peer's next slot and hands the interpreter a pointer into it: the
//             interpreter copies or reduces straight out of shared memory, one copy per step as in
//             NCCL's SHM transport. A message larger than a slot (a schedule's unsliced step) is
//             gathered into a staging buffer of this rank, slot by slot.
//   before_write  waits until no queued send still reads the bytes about to be written.
//   finish    waits until every queued send is in a FIFO: after that nothing reads the caller's
//             buffers, whatever happens next.
//
// Every slot carries the call's sequence number and its message's size, so a peer making another
// call, or the same call with another count, is a mismatch, never a wrong result.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../runtime/interpreter.hpp"
#include "endpoint.hpp"
#include "fifo.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

class FifoTransport {
 public:
  explicit FifoTransport(Endpoint& endpoint)
      : endpoint_(endpoint), queues_(endpoint.memory().queues), staging_(endpoint.memory().staging) {
    for (std::deque<QueuedSend>& queue : queues_) queue.clear();  // a failed call may have left some
  }
  FifoTransport(const FifoTransport&) = delete;
  FifoTransport& operator=(const FifoTransport&) = delete;

  runtime::Buffers attach(const algo::Schedule& schedule, runtime::Buffers caller, std::size_t element_size) {
    std::vector<std::byte>& scratch = endpoint_.memory().scratch;
    scratch.resize(schedule.scratch_count * element_size);
    caller.scratch = scratch.empty() ? nullptr : scratch.data();
    return caller;
  }

  void send(std::size_t, const algo::Step& step, const std::byte* src, std::size_t bytes) {
    queues_[static_cast<std::size_t>(step.peer)].push_back(QueuedSend{src, bytes, 0});
    ++queued_;
    flush();
  }

  const std::byte* receive(std::size_t index, const algo::Step& step, std::size_t bytes) {
    Fifo& in = endpoint_.from(step.peer);
    const SlotHeader* slot = next_slot(in, index, step.peer, bytes, 0);
    if (slot->piece_bytes == bytes) {
      in_slot_ = &in;  // read in place; released by received()
      return Fifo::payload(slot);
    }
    staging_.resize(bytes);
    for (std::size_t offset = 0;;) {
      std::copy_n(Fifo::payload(slot), slot->piece_bytes, staging_.data() + offset);
      offset += slot->piece_bytes;
      in.release();
      if (offset == bytes) break;
      slot = next_slot(in, index, step.peer, bytes, offset);
    }
    in_slot_ = nullptr;
    return staging_.data();
  }

  void received(std::size_t, const algo::Step&, std::size_t) {
    if (in_slot_ != nullptr) in_slot_->release();
    in_slot_ = nullptr;
  }

  void before_write(std::size_t, std::byte* dst, std::size_t bytes) {
    if (queued_ == 0 || bytes == 0) return;
    const auto still_read = [&] {
      flush();
      for (const std::deque<QueuedSend>& queue : queues_) {
        for (const QueuedSend& q : queue) {
          if (q.src < dst + bytes && dst < q.src + q.bytes) return true;
        }
      }
      return false;
    };
    endpoint_.wait_for([&] { return !still_read(); }, [] { return std::string("room in a peer's FIFO"); });
  }

  void finish() {
    endpoint_.wait_for(
        [&] {
          flush();
          return queued_ == 0;
        },
        [&] { return "room in the FIFO to rank " + std::to_string(blocked_peer()); });
  }

 private:
  // Copies queued sends into their FIFOs while there is room, in order per peer.
  void flush() {
    if (queued_ == 0) return;
    for (std::size_t peer = 0; peer < queues_.size(); ++peer) {
      std::deque<QueuedSend>& queue = queues_[peer];
      if (queue.empty()) continue;
      Fifo& out = endpoint_.to(static_cast<int>(peer));
      while (!queue.empty() && out.can_write()) {
        QueuedSend& q = queue.front();
        const std::size_t piece = std::min(out.slot_bytes(), q.bytes - q.offset);
        out.write(SlotKind::collective, endpoint_.sequence(), q.bytes, q.offset, q.src + q.offset, piece);
        q.offset += piece;
        if (q.offset == q.bytes) {
          queue.pop_front();
          --queued_;
        }
      }
    }
  }

  // Waits for the slot of `peer`'s message for step `index` at `offset`, checking it belongs here.
  const SlotHeader* next_slot(Fifo& in, std::size_t index, int peer, std::size_t bytes, std::size_t offset) {
    const SlotHeader* slot = nullptr;
    endpoint_.wait_for(
        [&] {
          flush();
          slot = in.peek();
          return slot != nullptr;
        },
        [&] { return chorus::detail::concat("rank ", peer, "'s message for step ", index); });
    if (slot->kind != SlotKind::collective || slot->sequence != endpoint_.sequence()) {
      endpoint_.mismatched_message(
          slot->kind == SlotKind::collective
              ? chorus::detail::concat("rank ", peer, " sent data of call ", slot->sequence, " while this rank is at call ",
                                       endpoint_.sequence())
              : chorus::detail::concat("rank ", peer, " sent a point-to-point message (send) while this rank is in a ",
                                       endpoint_.call()));
    }
    if (slot->bytes != bytes || slot->offset != offset) {
      endpoint_.mismatched_message(chorus::detail::concat("rank ", peer, " sent ", slot->bytes, " bytes for step ",
                                                          index, ", which expects ", bytes));
    }
    return slot;
  }

  int blocked_peer() const {
    for (std::size_t peer = 0; peer < queues_.size(); ++peer) {
      if (!queues_[peer].empty()) return static_cast<int>(peer);
    }
    return -1;
  }

  Endpoint& endpoint_;
  std::vector<std::deque<QueuedSend>>& queues_;  // per peer; kept by the endpoint so calls allocate nothing
  std::vector<std::byte>& staging_;
  std::size_t queued_ = 0;
  Fifo* in_slot_ = nullptr;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
