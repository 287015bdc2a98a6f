// LL one-shot all_reduce (push, no barrier): each rank writes its input as LL lines (4 data bytes + the
// call's 4-byte flag, stored as one 8-byte word) into every rank's LL buffer, in the slot for its rank; then
// it polls its own buffer until each source's lines carry this call's flag and folds them in rank order.
// A line's flag arrives with its data, so no fence or barrier is needed, flags never need clearing, and
// it works where peers cannot do atomics (PCIe). Half the bytes moved are flags: for small messages.
//
// Reuse without a barrier rests on the parity halves: a peer writes round f+2 into the half this rank
// reads in round f only after reading this rank's round f+1 lines, which this rank pushes only after its
// block has finished round f. That needs every round to carry at least one line from every rank to every
// rank through the same block, so LL runs in block 0 alone (other blocks return at once) and a call with
// no elements does no round.
//
// Flags are 32 bits: after 2^32 - 2 rounds a flag value comes back, and a line untouched since it last
// carried that flag (a large call, billions of small ones, a large one again) would pass for fresh. So the
// round whose flag wraps first clears the LL buffers behind two barriers (ll_clear_at_wrap).
#pragma once

#include <cstring>

#include "../../core/config.hpp"
#include "all_reduce_call.hpp"
#include "bounded_wait.hpp"
#include "partition.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

// Every rank zeroes its own LL buffer (flag 0 is never a call's) between two barriers of block 0: after
// the first no peer still writes or reads a round of the old flags, and the second keeps every peer's
// first round of the new flags behind the zeroes. Runs once per 2^32 - 2 rounds, on every rank at the
// same round, since all ranks count the same rounds.
CHORUS_HOST_DEVICE_TEMPLATE
template <class Block>
CHORUS_HOST_DEVICE inline bool ll_clear_at_wrap(const Block& block, const RankView& view, BlockCounters& counters) {
  std::uint32_t counter = counters.barrier_epoch;
  if (!flag_barrier(block, view, ++counter)) return false;
  auto* lines = reinterpret_cast<std::uint64_t*>(view.scratch[view.rank] + view.layout.ll_offset());
  const std::size_t words = view.layout.ll_bytes / sizeof(std::uint64_t);
  for (std::size_t i = static_cast<std::size_t>(block.lane()); i < words; i += static_cast<std::size_t>(block.lanes())) {
    block.store_line(lines + i, 0);
  }
  if (!flag_barrier(block, view, ++counter)) return false;
  block.sync();  // every lane has read the counter before lane 0 moves it on
  if (block.lane() == 0) counters.barrier_epoch = counter;
  return true;
}

// Line `line` of source `source`, parity `parity` (the flag's low bit), in `rank`'s LL buffer.
CHORUS_HOST_DEVICE inline std::uint64_t* ll_slot(const RankView& view, int rank, std::uint32_t parity, int source,
                                                 std::size_t capacity, std::size_t line) {
  auto* base = reinterpret_cast<std::uint64_t*>(view.scratch[rank] + view.layout.ll_offset());
  return base + (static_cast<std::size_t>(parity) * static_cast<std::size_t>(view.nranks) + static_cast<std::size_t>(source)) *
                    capacity +
         line;
}

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool ll_one_shot_all_reduce(const Block& block, const RankView& view,
                                                      const AllReduceCall<T>& call) {
  if (block.block() != 0 || call.count == 0) return true;
  BlockCounters& counters = view.state->block[0];
  std::uint32_t flag = counters.ll_epoch;
  constexpr std::size_t unit_bytes = ll_unit_bytes(sizeof(T));  // whole elements in whole lines
  constexpr std::size_t lines_per_unit = unit_bytes / 4;
  constexpr std::size_t elements_per_unit = unit_bytes / sizeof(T);
  const std::size_t capacity = ll_capacity_lines(view.layout.ll_bytes, view.nranks);
  const std::size_t units_per_round = capacity / lines_per_unit;
  const std::size_t total_units = (call.count + elements_per_unit - 1) / elements_per_unit;
  const std::size_t rounds = round_count(total_units, units_per_round);
  const int divide = call.op == ReduceOp::avg ? view.nranks : 0;
  bool ok = true;
  for (std::size_t r = 0; r < rounds && ok; ++r) {
    const std::uint32_t next = next_ll_flag(flag);
    if (next < flag && !ll_clear_at_wrap(block, view, counters)) {
      ok = false;
      break;
    }
    flag = next;
    const std::uint32_t parity = flag & 1u;
    const Range round = round_range(total_units, units_per_round, r);
    // The same lane pushes and then reads a unit, so writing the output in place never overwrites input
    // that this rank has yet to push.
    for (std::size_t u = round.offset + static_cast<std::size_t>(block.lane()); u < round.offset + round.count && ok;
         u += static_cast<std::size_t>(block.lanes())) {
      const std::size_t first = u * elements_per_unit;
      const std::size_t elements = call.count - first < elements_per_unit ? call.count - first : elements_per_unit;
      std::uint32_t words[lines_per_unit] = {};
      std::memcpy(words, call.input + first, elements * sizeof(T));
      const std::size_t line0 = (u - round.offset) * lines_per_unit;
      for (int peer = 0; peer < view.nranks; ++peer) {
        for (std::size_t l = 0; l < lines_per_unit; ++l) {
          block.store_line(ll_slot(view, peer, parity, view.rank, capacity, line0 + l), ll_line(words[l], flag));
        }
      }
      T acc[elements_per_unit] = {};
      for (int source = 0; source < view.nranks && ok; ++source) {
        for (std::size_t l = 0; l < lines_per_unit && ok; ++l) {
          const std::uint64_t* slot = ll_slot(view, view.rank, parity, source, capacity, line0 + l);
          std::uint64_t line = block.load_line(slot);
          while (ll_flag(line) != flag) {
            if (block.expired()) {
              record_timeout(block, view, source, static_cast<std::uint32_t>(u), flag, ll_flag(line), WaitKind::ll_line);
              ok = false;
              break;
            }
            block.backoff();
            line = block.load_line(slot);
          }
          words[l] = ll_data(line);
        }
        T value[elements_per_unit] = {};
        std::memcpy(value, words, sizeof(value));
        for (std::size_t e = 0; e < elements; ++e) acc[e] = source == 0 ? value[e] : combine(call.op, acc[e], value[e]);
      }
      if (!ok) break;
      for (std::size_t e = 0; e < elements; ++e) call.output[first + e] = divide > 0 ? divide_by(acc[e], divide) : acc[e];
    }
    ok = !block.sync_or(!ok);  // the whole block finishes round f before any lane pushes round f+1
  }
  if (!ok) return false;
  if (block.lane() == 0) counters.ll_epoch = flag;
  return true;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
