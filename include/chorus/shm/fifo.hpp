// One ordered pair's FIFO in the segment: a ring of fixed-size slots with one writer (the sender)
// and one reader (the receiver). The sender fills slot `head % slots` and publishes it by storing its
// serial (head + 1, release); the receiver waits for that serial in the slot itself, reads the slot in
// place and frees it by advancing the shared `tail` (release). The sender caches `tail` and reloads it
// only when the ring looks full, so a small message costs the receiver one cache line (header and
// payload together) and the sender nothing until its ring fills.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../core/config.hpp"
#include "layout.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

class Fifo {
 public:
  Fifo() = default;
  Fifo(const Layout& layout, std::byte* base, int sender, int receiver) {
    const std::size_t pair = layout.pair(sender, receiver);
    control_ = reinterpret_cast<FifoControl*>(base + layout.fifo_control) + pair;
    slots_ = base + layout.slot_data + pair * layout.slots * layout.slot_stride;
    stride_ = layout.slot_stride;
    count_ = layout.slots;
    slot_bytes_ = layout.slot_bytes;
  }

  std::size_t slot_bytes() const { return slot_bytes_; }

  // Sender: whether a slot is free, and writing it.
  bool can_write() {
    if (head_ - tail_seen_ < count_) return true;
    tail_seen_ = control_->tail.load(std::memory_order_acquire);
    return head_ - tail_seen_ < count_;
  }
  // Copies `piece_bytes` from `src` into the next slot and publishes it. Call only if can_write().
  void write(SlotKind kind, std::uint64_t sequence, std::uint64_t message_bytes, std::uint64_t offset,
             const std::byte* src, std::size_t piece_bytes) {
    auto* header = reinterpret_cast<SlotHeader*>(slot(head_));
    header->sequence = sequence;
    header->bytes = message_bytes;
    header->offset = offset;
    header->kind = kind;
    header->piece_bytes = static_cast<std::uint32_t>(piece_bytes);
    if (piece_bytes > 0) std::memcpy(payload(header), src, piece_bytes);
    header->serial.store(++head_, std::memory_order_release);
  }
  // Sender: every slot written so far has been released by the receiver.
  bool all_taken() {
    tail_seen_ = control_->tail.load(std::memory_order_acquire);
    return tail_seen_ == head_;
  }

  // Receiver: the oldest unreleased slot, or null when none has arrived.
  const SlotHeader* peek() {
    const auto* header = reinterpret_cast<const SlotHeader*>(slot(tail_));
    return header->serial.load(std::memory_order_acquire) == tail_ + 1 ? header : nullptr;
  }
  static std::byte* payload(SlotHeader* header) {
    return reinterpret_cast<std::byte*>(header) + (header->piece_bytes <= kInlineBytes ? sizeof(SlotHeader) : kLine);
  }
  static const std::byte* payload(const SlotHeader* header) { return payload(const_cast<SlotHeader*>(header)); }
  // Receiver: frees the slot peek() returned.
  void release() { control_->tail.store(++tail_, std::memory_order_release); }

 private:
  std::byte* slot(std::uint64_t index) const { return slots_ + (index % count_) * stride_; }

  FifoControl* control_ = nullptr;
  std::byte* slots_ = nullptr;
  std::size_t stride_ = 0;
  std::uint32_t count_ = 0;
  std::size_t slot_bytes_ = 0;
  std::uint64_t head_ = 0;       // sender: slots written; receiver: unused
  std::uint64_t tail_ = 0;       // receiver: slots released; sender: unused
  std::uint64_t tail_seen_ = 0;  // sender's cached tail
};

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
