// Every spin in a kernel is bounded: past the deadline (CHORUS_KERNEL_TIMEOUT_MS), or once the host aborts
// the communicator (Signals::aborted, which Block::expired polls), the waiting lane writes what it was
// waiting for into the host-visible TimeoutRecord and gives up, and the block returns, so the host raises
// chorus::Error instead of the GPU spinning forever.
#pragma once

#include <cstdint>

#include "../../core/config.hpp"
#include "partition.hpp"
#include "rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// Only the first timeout of a rank is kept: it names the wait that started the stall; later ones are
// its consequences. The fields are written before `timed_out` is released.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline void record_timeout(const Block& block, const RankView& view, int peer, std::uint32_t step,
                                              std::uint32_t expected, std::uint32_t seen, WaitKind what) {
  TimeoutRecord* record = view.timeout;
  if (record == nullptr || !block.claim(&record->claimed)) return;
  record->rank = view.rank;
  record->peer = peer;
  record->block = block.block();
  record->step = step;
  record->expected = expected;
  record->seen = seen;
  record->wait = static_cast<std::uint32_t>(what);
  block.store_release(&record->timed_out, 1u);
}

// Counts a launch of this rank's kernel as started (block 0, lane 0; the host reads it with acquire).
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline void mark_started(const Block& block, const RankView& view) {
  if (view.timeout == nullptr || block.block() != 0 || block.lane() != 0) return;
  block.store_release(&view.timeout->started, block.load_acquire(&view.timeout->started) + 1u);
}

// Spins until the counter at `flag` has reached `target` (see reached()); false on timeout.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline bool wait_until_reached(const Block& block, const RankView& view, const std::uint32_t* flag,
                                                  std::uint32_t target, int peer, std::uint32_t step,
                                                  WaitKind what) {
  block.delay(view, step);
  for (;;) {
    const std::uint32_t seen = block.load_acquire(flag);
    if (reached(seen, target)) return true;
    if (block.expired()) {
      record_timeout(block, view, peer, step, target, seen, what);
      return false;
    }
    block.backoff();
  }
}

// Flag barrier among block `block()` of every rank: each lane signals some peers (this rank's counter into
// the peer's slot for this rank), then waits for those peers' counters in its own slots; one uint32 per
// (block, peer). Release on the signal, acquire on the wait, and the block barrier after it, so what any
// lane of a peer wrote before the barrier is visible to every lane here after it. Barriers alternate
// between the start and end arrays (a fast peer may already signal the next barrier); the counter lives in
// RankState, so it continues across calls and graph replays. False (on every lane) if any lane timed out.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline bool flag_barrier(const Block& block, const RankView& view, std::uint32_t counter) {
  const int b = block.block();
  const bool use_start = (counter & 1u) != 0;
  block.sync();  // every lane's writes before the barrier happen before the signal
  for (int peer = block.lane(); peer < view.nranks; peer += block.lanes()) {
    Signals* remote = view.signals[peer];
    block.store_release(use_start ? &remote->start[b][view.rank] : &remote->end[b][view.rank], counter);
  }
  const Signals* own = view.signals[view.rank];
  bool ok = true;
  for (int peer = block.lane(); peer < view.nranks && ok; peer += block.lanes()) {
    ok = wait_until_reached(block, view, use_start ? &own->start[b][peer] : &own->end[b][peer], counter, peer,
                            counter, use_start ? WaitKind::barrier_start : WaitKind::barrier_end);
  }
  return !block.sync_or(!ok);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
