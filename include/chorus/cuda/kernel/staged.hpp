// Barrier-pull collectives other than all_reduce (broadcast, reduce, all_gather, reduce_scatter,
// all_to_all), one skeleton: per round, ranks copy what their peers need into staging, a flag barrier,
// each rank reads what it needs from its peers' staging, and a barrier before staging is reused. Block b
// only touches segment b of any rank's staging and syncs with block b of its peers (as one_shot does), and
// the barrier counter continues across calls of every barrier kernel, so calls of different collectives
// may follow each other on one team. Reductions fold rank 0, 1, ..., n-1 (the host's direct and one-shot
// order: every rank gets the same bits).
#pragma once

#include "../../core/config.hpp"
#include "bounded_wait.hpp"
#include "collective_call.hpp"
#include "partition.hpp"
#include "reduce_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// Where block `block` of a rank keeps staged part `part` (of `parts`) this round.
struct StagedSlot {
  std::size_t base;  // the block's segment, in elements from the staging start
  std::size_t slot;  // elements per part
  CHORUS_HOST_DEVICE std::size_t at(int part) const { return base + static_cast<std::size_t>(part) * slot; }
};

// Runs the rounds: stage(share, slots) then read(share, slots), each followed by a flag barrier. `share`
// is this block's range of each rank's `count`-element part this round. False on a timed-out wait.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block, class Stage, class Read>
CHORUS_HOST_DEVICE inline bool staged_rounds(const Block& block, const RankView& view, std::size_t count, int parts,
                                             const Stage& stage, const Read& read) {
  BlockCounters& counters = view.state->block[block.block()];
  std::uint32_t counter = counters.barrier_epoch;
  const std::size_t segment = segment_elements(view.layout.staging_bytes, view.blocks, sizeof(T));
  const StagedSlot slots{segment * static_cast<std::size_t>(block.block()),
                         stage_slot_elements(segment, parts, Pack<T>::kElements)};
  const std::size_t rounds = round_count(count, slots.slot * static_cast<std::size_t>(view.blocks));
  for (std::size_t r = 0; r < rounds; ++r) {
    const Range share = staged_share(count, slots.slot, view.blocks, block.block(), r, Pack<T>::kElements);
    stage(share, slots);
    if (!flag_barrier(block, view, ++counter)) return false;
    read(share, slots);
    if (!flag_barrier(block, view, ++counter)) return false;
  }
  block.sync();  // every lane has read the counter before lane 0 moves it on
  if (block.lane() == 0) counters.barrier_epoch = counter;
  return true;
}

template <class T>
CHORUS_HOST_DEVICE inline ReduceCopyArgs<T> copy_args(const T* from, T* to) {
  return ReduceCopyArgs<T>{{from}, 1, {to}, 1, ReduceOp::sum, 0};
}

// The root stages its input (and copies it to its own output); every other rank copies the root's staging.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool staged_broadcast(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const bool root = view.rank == call.root;
  return staged_rounds<T>(
      block, view, call.count, 1,
      [&](Range share, StagedSlot slots) {
        if (!root) return;
        ReduceCopyArgs<T> copy = copy_args<T>(call.input + share.offset, staging_of<T>(view, view.rank) + slots.at(0));
        copy.destinations[copy.destination_count++] = call.output + share.offset;
        reduce_copy(block, copy, share.count);
      },
      [&](Range share, StagedSlot slots) {
        if (root) return;
        reduce_copy(block, copy_args<T>(staging_of<T>(view, call.root) + slots.at(0), call.output + share.offset), share.count);
      });
}

// Every rank stages its input; the root folds them all in rank order.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool staged_reduce(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  return staged_rounds<T>(
      block, view, call.count, 1,
      [&](Range share, StagedSlot slots) {
        reduce_copy(block, copy_args<T>(call.input + share.offset, staging_of<T>(view, view.rank) + slots.at(0)), share.count);
      },
      [&](Range share, StagedSlot slots) {
        if (view.rank != call.root) return;
        ReduceCopyArgs<T> fold{{}, view.nranks, {call.output + share.offset}, 1, call.op,
                               call.op == ReduceOp::avg ? view.nranks : 0};
        for (int k = 0; k < view.nranks; ++k) fold.sources[k] = staging_of<T>(view, k) + slots.at(0);
        reduce_copy(block, fold, share.count);
      });
}

// Every rank stages its input (and copies it to its own block of the output); then copies each peer's.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool staged_all_gather(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const auto block_of = [&](int rank) { return call.output + static_cast<std::size_t>(rank) * call.count; };
  return staged_rounds<T>(
      block, view, call.count, 1,
      [&](Range share, StagedSlot slots) {
        ReduceCopyArgs<T> copy = copy_args<T>(call.input + share.offset, staging_of<T>(view, view.rank) + slots.at(0));
        copy.destinations[copy.destination_count++] = block_of(view.rank) + share.offset;  // in place: itself
        reduce_copy(block, copy, share.count);
      },
      [&](Range share, StagedSlot slots) {
        for (int k = 0; k < view.nranks; ++k) {
          if (k == view.rank) continue;
          reduce_copy(block, copy_args<T>(staging_of<T>(view, k) + slots.at(0), block_of(k) + share.offset), share.count);
        }
      });
}

// Every rank stages its share of every rank's block, part j in slot j; rank r folds slot r of every rank.
// In place the output is the rank's own input block, written only after the barrier that follows staging.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool staged_reduce_scatter(const Block& block, const RankView& view,
                                                     const CollectiveCall<T>& call) {
  return staged_rounds<T>(
      block, view, call.count, view.nranks,
      [&](Range share, StagedSlot slots) {
        for (int j = 0; j < view.nranks; ++j) {
          const T* from = call.input + static_cast<std::size_t>(j) * call.count + share.offset;
          reduce_copy(block, copy_args<T>(from, staging_of<T>(view, view.rank) + slots.at(j)), share.count);
        }
      },
      [&](Range share, StagedSlot slots) {
        ReduceCopyArgs<T> fold{{}, view.nranks, {call.output + share.offset}, 1, call.op,
                               call.op == ReduceOp::avg ? view.nranks : 0};
        for (int k = 0; k < view.nranks; ++k) fold.sources[k] = staging_of<T>(view, k) + slots.at(view.rank);
        reduce_copy(block, fold, share.count);
      });
}

// Every rank stages block j of its input in slot j; rank r copies slot r of rank k into its output block k.
CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool staged_all_to_all(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  const auto at = [&](int j, Range share) { return static_cast<std::size_t>(j) * call.count + share.offset; };
  return staged_rounds<T>(
      block, view, call.count, view.nranks,
      [&](Range share, StagedSlot slots) {
        for (int j = 0; j < view.nranks; ++j) {
          reduce_copy(block, copy_args<T>(call.input + at(j, share), staging_of<T>(view, view.rank) + slots.at(j)), share.count);
        }
      },
      [&](Range share, StagedSlot slots) {
        for (int k = 0; k < view.nranks; ++k) {
          reduce_copy(block, copy_args<T>(staging_of<T>(view, k) + slots.at(view.rank), call.output + at(k, share)), share.count);
        }
      });
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
