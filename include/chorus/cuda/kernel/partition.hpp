// Index arithmetic of the kernels, shared by the device code and the CPU twin and tested exhaustively on
// the CPU: how a call splits into rounds, blocks and ring pieces, where 16-byte vectors can be used,
// LL line packing, and counter comparisons that survive wrap-around.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../algo/chunking.hpp"
#include "../../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

using algo::Range;

inline constexpr std::size_t kPackBytes = 16;  // one 16-byte vector load or store

// `count` elements processed in rounds of at most `per_round` (a staging buffer's capacity).
CHORUS_HOST_DEVICE constexpr std::size_t round_count(std::size_t count, std::size_t per_round) {
  return algo::slice_count(count, per_round);
}
CHORUS_HOST_DEVICE constexpr Range round_range(std::size_t count, std::size_t per_round, std::size_t round) {
  const std::size_t offset = round * per_round;
  const std::size_t rest = count > offset ? count - offset : 0;
  return Range{offset, rest < per_round ? rest : per_round};
}

// Block `block` of `blocks` takes a near-equal share of `whole`.
CHORUS_HOST_DEVICE constexpr Range block_share(Range whole, int blocks, int block) {
  return algo::slice_of(whole, static_cast<std::size_t>(blocks), static_cast<std::size_t>(block));
}

// The same, in whole 16-byte packs (the last share takes the remainder), so every share starts at the
// misalignment of `whole` and can use vectors.
CHORUS_HOST_DEVICE constexpr Range packed_share(Range whole, std::size_t parts, std::size_t part,
                                                std::size_t per_pack) {
  const std::size_t packs = whole.count / per_pack;
  const Range in_packs = algo::chunk_range(packs, parts, part);
  const std::size_t offset = in_packs.offset * per_pack;
  const std::size_t count = part + 1 == parts ? whole.count - offset : in_packs.count * per_pack;
  return Range{whole.offset + offset, count};
}

// Barrier-family staging is cut into one segment per block, each a whole number of packs: block b only
// ever touches segment b of any rank, and only block b of each rank syncs with it, so what one block
// does can never race with another block of a peer, whatever the sizes of consecutive calls.
CHORUS_HOST_DEVICE constexpr std::size_t segment_elements(std::size_t staging_bytes, int blocks,
                                                          std::size_t element_bytes) {
  const std::size_t per_pack = kPackBytes / element_bytes;
  return staging_bytes / element_bytes / static_cast<std::size_t>(blocks) / per_pack * per_pack;
}

// Two-shot keeps block b's share of all n chunks in segment b, each share rounded up to whole packs; with
// packed shares, each rounded share is at most 3 packs above its exact fraction, so a round of
// (segment - 4 n packs) x blocks elements always fits (tests/cuda checks it for every size). 0 if the
// segment is too small for n ranks.
CHORUS_HOST_DEVICE constexpr std::size_t two_shot_round_elements(std::size_t segment, int ranks, int blocks,
                                                                 std::size_t per_pack) {
  const std::size_t reserve = 4 * static_cast<std::size_t>(ranks) * per_pack;
  return segment > reserve ? (segment - reserve) * static_cast<std::size_t>(blocks) : 0;
}

// A span of elements split into a scalar head (up to the first 16-byte boundary), whole 16-byte packs
// and a scalar tail. Vectors are used only when every pointer taking part has the same misalignment
// (mod 16) and it is a whole number of elements; otherwise everything is head.
struct PackSplit {
  std::size_t head;   // elements before the first pack
  std::size_t packs;  // 16-byte packs
  std::size_t tail;   // elements after the last pack
};

CHORUS_HOST_DEVICE constexpr PackSplit pack_split(std::uintptr_t address, bool same_misalignment,
                                                  std::size_t count, std::size_t element_bytes) {
  const std::size_t misalignment = address % kPackBytes;
  if (!same_misalignment || misalignment % element_bytes != 0 || element_bytes > kPackBytes) {
    return PackSplit{count, 0, 0};
  }
  std::size_t head = misalignment == 0 ? 0 : (kPackBytes - misalignment) / element_bytes;
  if (head > count) head = count;
  const std::size_t per_pack = kPackBytes / element_bytes;
  const std::size_t packs = (count - head) / per_pack;
  return PackSplit{head, packs, count - head - packs * per_pack};
}

// Counters only grow, modulo 2^32: `seen` has reached `target` if it is at most 2^31 - 1 steps past it.
// Correct across the wrap as long as no two ranks drift 2^31 steps apart.
CHORUS_HOST_DEVICE constexpr bool reached(std::uint32_t seen, std::uint32_t target) {
  return static_cast<std::int32_t>(seen - target) >= 0;
}

// LL: a line is 8 bytes written at once, 4 bytes of data and the 4-byte flag of the call that wrote it,
// so a reader that sees the flag it expects also sees that call's data (8-byte stores are single-copy
// atomic; a 16-byte vector store is not). Flags are never 0 (fresh memory) and alternate in parity,
// which picks the buffer half: a rank cannot start call e+2 before every peer has read its call e.
CHORUS_HOST_DEVICE constexpr std::uint64_t ll_line(std::uint32_t data, std::uint32_t flag) {
  return static_cast<std::uint64_t>(flag) << 32 | data;
}
CHORUS_HOST_DEVICE constexpr std::uint32_t ll_data(std::uint64_t line) { return static_cast<std::uint32_t>(line); }
CHORUS_HOST_DEVICE constexpr std::uint32_t ll_flag(std::uint64_t line) { return static_cast<std::uint32_t>(line >> 32); }
// 0 is skipped; after 2^32 - 1 (odd) comes 2 (even), so consecutive flags always differ in parity.
CHORUS_HOST_DEVICE constexpr std::uint32_t next_ll_flag(std::uint32_t flag) {
  return flag == 0xffffffffu ? 2u : flag + 1u;
}
CHORUS_HOST_DEVICE constexpr std::size_t ll_lines(std::size_t bytes) { return (bytes + 3) / 4; }
// LL works in units of whole elements and whole lines: max(element, 4 bytes).
CHORUS_HOST_DEVICE constexpr std::size_t ll_unit_bytes(std::size_t element_bytes) {
  return element_bytes > 4 ? element_bytes : 4;
}
// Lines one rank may have in flight per source and parity within `ll_bytes`.
CHORUS_HOST_DEVICE constexpr std::size_t ll_capacity_lines(std::size_t ll_bytes, int ranks) {
  return ll_bytes / (2 * static_cast<std::size_t>(ranks) * sizeof(std::uint64_t));
}

// Simple: step `step` of a FIFO of `depth` slots uses slot step % depth; the sender may fill it once
// the receiver has consumed step - depth. The counters wrap at 2^32, so depth must divide 2^32 (a power
// of two): with depth 3, steps 2^32 - 1 and 0 (= 2^32) would both use slot 0, and the second would
// overwrite the first before it is read.
CHORUS_HOST_DEVICE constexpr bool valid_fifo_depth(int depth) { return depth >= 2 && (depth & (depth - 1)) == 0; }
CHORUS_HOST_DEVICE constexpr int fifo_slot(std::uint32_t step, int depth) {
  return static_cast<int>(step % static_cast<std::uint32_t>(depth));
}

// Ring pieces: every rank must take the same number of FIFO steps, so the piece count of a block comes from
// the largest chunk (chunk 0), and every chunk's share is cut into that many near-equal pieces.
CHORUS_HOST_DEVICE constexpr std::size_t ring_pieces(std::size_t count, int ranks, int blocks, int block,
                                                     std::size_t slot_elements) {
  const Range largest = block_share(algo::chunk_range(count, static_cast<std::size_t>(ranks), 0), blocks, block);
  return algo::slice_count(largest.count, slot_elements);
}
CHORUS_HOST_DEVICE constexpr Range ring_piece(std::size_t count, int ranks, int blocks, int block, int chunk,
                                              std::size_t pieces, std::size_t piece) {
  const Range share =
      block_share(algo::chunk_range(count, static_cast<std::size_t>(ranks), static_cast<std::size_t>(chunk)), blocks,
                  block);
  return algo::slice_of(share, pieces, piece);
}

// Barrier-pull collectives other than all_reduce: each round, block b stages `parts` pieces (1 for
// broadcast, reduce and all_gather: its share of the rank's input; n for reduce_scatter and all_to_all:
// its share of each rank's block) into slots of whole packs of its segment. 0 if the segment is too small.
CHORUS_HOST_DEVICE constexpr std::size_t stage_slot_elements(std::size_t segment, int parts, std::size_t per_pack) {
  return segment / static_cast<std::size_t>(parts) / per_pack * per_pack;
}
// Block `block`'s share of round `round` when every round moves `slot` elements per block (of each part):
// whole packs, so the share fits its slot (slot is a whole number of packs; tests/cuda_twin checks it).
CHORUS_HOST_DEVICE constexpr Range staged_share(std::size_t count, std::size_t slot, int blocks, int block,
                                                std::size_t round, std::size_t per_pack) {
  return packed_share(round_range(count, slot * static_cast<std::size_t>(blocks), round), static_cast<std::size_t>(blocks),
                      static_cast<std::size_t>(block), per_pack);
}

// Ring all_gather and reduce_scatter move whole per-rank blocks of `count` elements: block b of every rank
// takes the same share of each, cut into the same number of pieces of at most a FIFO slot, so every rank
// takes the same number of steps.
CHORUS_HOST_DEVICE constexpr std::size_t ring_block_pieces(std::size_t count, int blocks, int block,
                                                           std::size_t slot_elements) {
  return algo::slice_count(block_share(Range{0, count}, blocks, block).count, slot_elements);
}
CHORUS_HOST_DEVICE constexpr Range ring_block_piece(std::size_t count, int blocks, int block, std::size_t pieces,
                                                    std::size_t piece) {
  return algo::slice_of(block_share(Range{0, count}, blocks, block), pieces, piece);
}
// algo::ring_reduce_scatter: position p first sends its input's block of position p-1; at step k it
// receives the partial of position p-2-k's block, folds its own input in and passes it on; the last step
// (k = n-2) finishes its own block. So the block of position q is folded by q+1, q+2, ..., q.
CHORUS_HOST_DEVICE constexpr int ring_scatter_send_position(int position, int n) { return algo::mod(position - 1, n); }
CHORUS_HOST_DEVICE constexpr int ring_scatter_recv_position(int position, int step, int n) {
  return algo::mod(position - 2 - step, n);
}
// algo::ring_all_gather: position p sends its own block, then at step k receives position p-1-k's.
CHORUS_HOST_DEVICE constexpr int ring_gather_block_position(int position, int step, int n) {
  return algo::mod(position - 1 - step, n);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
