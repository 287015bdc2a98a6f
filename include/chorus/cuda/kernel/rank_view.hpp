// What one rank's kernel sees of the team: its rank, the rank count, and where every rank's scratch
// and signals live. In-process multi-GPU, IPC and virtual ranks on one GPU differ only in how the
// pointers are filled, so one kernel serves all three, and the CPU twin fills them with host memory.
// Plain C++17 (compiled by g++ for the twin and by nvcc for the device); the layout is the same for both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

inline constexpr int kMaxRanks = 8;
inline constexpr int kMaxBlocks = 32;  // per rank: channels of the ring, slices of the others
// Distinct ring orders the ring and chain kernels' channels run on (block b on ring b % rings). NCCL's
// channels on one machine repeat a few rings (NVSwitch: one ring many times; a hybrid cube-mesh: a ring and
// its reverse), so a handful of distinct rings covers them and keeps the view small.
inline constexpr int kMaxRings = 8;
// Tree FIFOs: per block, per tree of the double binary tree, one link per neighbour: child 0, child 1, parent.
inline constexpr int kTrees = 2;
inline constexpr int kTreeLinks = 3;
inline constexpr int kTreeParentLink = 2;

// Written into by peers, one uint32 per (block, peer) so no two ranks ever write the same word (flags that
// share a word race: vLLM#2760). Separate start and end arrays: a fast peer may reach the end barrier
// while this rank still waits in the start barrier (one array hung on H100, vLLM#8558).
struct Signals {
  std::uint32_t start[kMaxBlocks][kMaxRanks];
  std::uint32_t end[kMaxBlocks][kMaxRanks];
  std::uint32_t fifo_head[kMaxBlocks];  // Simple: slots the previous rank has filled in this rank's FIFO
  std::uint32_t fifo_tail[kMaxBlocks];  // Simple: slots the next rank has consumed of the FIFO this rank fills
  std::uint32_t tree_head[kMaxBlocks][kTrees][kTreeLinks];  // tree: slots the neighbour on a link has filled here
  std::uint32_t tree_tail[kMaxBlocks][kTrees][kTreeLinks];  // tree: slots it has consumed of those this rank filled there
  std::uint32_t p2p_head[kMaxBlocks][kMaxRanks];  // p2p: slots source rank s has filled in this rank's FIFO from s
  std::uint32_t p2p_tail[kMaxBlocks][kMaxRanks];  // p2p: slots receiver r has consumed of the FIFO this rank fills at r
  // Nonzero once the communicator is aborted: 1 + the rank that aborted it (any rank's host writes it into
  // every rank's signals). Every spinning wait polls its own rank's word (Block::expired), so an abort
  // reaches kernels that are already running.
  std::uint32_t aborted;
};

// This rank's own counters, kept in (device) memory between calls so a replayed CUDA graph continues
// the sequence instead of restarting it. Written only by this rank's block b (entry b).
struct BlockCounters {
  std::uint32_t barrier_epoch;  // start/end barrier flag of the last call
  std::uint32_t ll_epoch;       // LL flag of the last call (also selects the parity half of the LL buffer)
  std::uint32_t fifo_sent;      // Simple: slots filled in the next rank's FIFO, ever
  std::uint32_t fifo_received;  // Simple: slots consumed from this rank's FIFO, ever
};
// The tree's counters of block b, per tree and link (kernel/tree.hpp): slots sent and received, ever.
struct TreeCounters {
  std::uint32_t sent[kTrees][kTreeLinks];
  std::uint32_t received[kTrees][kTreeLinks];
};
// p2p (point-to-point transfers): per block, one FIFO to and one from every peer.
struct P2pCounters {
  std::uint32_t sent[kMaxRanks];      // slots filled in peer's FIFO from this rank, ever
  std::uint32_t received[kMaxRanks];  // slots consumed from this rank's FIFO from peer, ever
};
struct RankState {
  BlockCounters block[kMaxBlocks];
  TreeCounters tree[kMaxBlocks];
  P2pCounters p2p[kMaxBlocks];
};

// Where a bounded wait gave up: the first timeout of a call (rank, the peer it waited for, the step,
// the value it expected and the one it saw). The first waiter to give up claims it (compare-and-swap on
// `claimed`) and sets `timed_out` last, with release, so the host reads a complete record.
struct TimeoutRecord {
  std::uint32_t claimed;
  std::uint32_t timed_out;
  std::int32_t rank;
  std::int32_t peer;
  std::int32_t block;
  std::uint32_t step;
  std::uint32_t expected;
  std::uint32_t seen;
  std::uint32_t wait;  // a WaitKind: a code, not a string, since a device string's address means nothing on the host
  // Launches of this rank's kernel that have started (block 0, lane 0 counts on entry): the host's bound on
  // a wait starts when the kernel it waits for starts, not when earlier work queued ahead of it ends.
  std::uint32_t started;
};

// Which wait gave up, for the host's message.
enum class WaitKind : std::uint32_t {
  barrier_start,
  barrier_end,
  ll_line,
  fifo_filled,
  fifo_free,
  tree_up_filled,    // a child's partial
  tree_up_free,      // a free slot at the parent
  tree_down_filled,  // the parent's result
  tree_down_free,    // a free slot at a child
  p2p_filled,        // a piece from the sender
  p2p_free,          // a free slot at the receiver
};

inline const char* to_string(WaitKind kind) {
  switch (kind) {
    case WaitKind::barrier_start: return "barrier (start slots)";
    case WaitKind::barrier_end: return "barrier (end slots)";
    case WaitKind::ll_line: return "LL line";
    case WaitKind::fifo_filled: return "Simple FIFO: slot from the previous rank";
    case WaitKind::fifo_free: return "Simple FIFO: free slot at the next rank";
    case WaitKind::tree_up_filled: return "tree reduce: partial from a child";
    case WaitKind::tree_up_free: return "tree reduce: free slot at the parent";
    case WaitKind::tree_down_filled: return "tree broadcast: result from the parent";
    case WaitKind::tree_down_free: return "tree broadcast: free slot at a child";
    case WaitKind::p2p_filled: return "p2p FIFO: piece from the sender";
    case WaitKind::p2p_free: return "p2p FIFO: free slot at the receiver";
  }
  return "unknown wait";
}

// Each protocol family owns its own region of a rank's scratch: stale data of one family must never be
// read as another's (flashinfer: "wrong output, not a hang").
struct ScratchLayout {
  std::size_t staging_bytes;  // one-shot / two-shot: each rank's copy of its input, read by peers
  std::size_t result_bytes;   // two-shot: reduced chunks pushed by their owners
  std::size_t ll_bytes;       // LL: two parity halves of [source rank][line]
  std::size_t fifo_bytes;     // Simple: per block, `fifo_depth` slots of `fifo_slot_bytes`
  std::size_t fifo_slot_bytes;
  int fifo_depth;
  std::size_t tree_bytes;     // tree: per block, tree and link, `fifo_depth` slots of `fifo_slot_bytes`
  std::size_t p2p_bytes;       // p2p: per block and source rank, `fifo_depth` slots of `fifo_slot_bytes`
  int p2p_sources;             // p2p: source ranks the region has room for

  CHORUS_HOST_DEVICE constexpr std::size_t staging_offset() const { return 0; }
  CHORUS_HOST_DEVICE constexpr std::size_t result_offset() const { return staging_bytes; }
  CHORUS_HOST_DEVICE constexpr std::size_t ll_offset() const { return staging_bytes + result_bytes; }
  CHORUS_HOST_DEVICE constexpr std::size_t fifo_offset() const { return staging_bytes + result_bytes + ll_bytes; }
  CHORUS_HOST_DEVICE constexpr std::size_t tree_offset() const { return fifo_offset() + fifo_bytes; }
  CHORUS_HOST_DEVICE constexpr std::size_t p2p_offset() const { return tree_offset() + tree_bytes; }
  CHORUS_HOST_DEVICE constexpr std::size_t total_bytes() const { return p2p_offset() + p2p_bytes; }
};

// A layout for `staging` bytes of barrier-family staging and `fifo_slot` x `depth` bytes of FIFO per
// block (the ring's, and the tree's per tree and link: the tree uses the Simple slot size and depth).
// Every region is a multiple of 256 bytes, so each starts cache-line aligned; slots are whole 16-byte
// vectors. No p2p region: with_p2p_region adds it.
CHORUS_HOST_DEVICE constexpr std::size_t round_up(std::size_t bytes, std::size_t unit) { return (bytes + unit - 1) / unit * unit; }
CHORUS_HOST_DEVICE constexpr ScratchLayout make_layout(std::size_t staging, std::size_t ll, std::size_t fifo_slot, int depth,
                                    int blocks) {
  const std::size_t slot = round_up(fifo_slot, 16);
  return ScratchLayout{round_up(staging, 256),
                       round_up(staging, 256),
                       round_up(ll, 256),
                       round_up(slot * static_cast<std::size_t>(depth) * static_cast<std::size_t>(blocks), 256),
                       slot,
                       depth,
                       round_up(slot * static_cast<std::size_t>(depth) * static_cast<std::size_t>(blocks) * kTrees * kTreeLinks, 256),
                       0,
                       0};
}

// The layout with room for p2p transfers among `ranks` ranks: a FIFO per (block, source rank) of the
// Simple FIFO's depth and slot size, its own region (a protocol family never reads another's).
CHORUS_HOST_DEVICE constexpr ScratchLayout with_p2p_region(ScratchLayout layout, int ranks, int blocks) {
  layout.p2p_bytes = round_up(layout.fifo_slot_bytes * static_cast<std::size_t>(layout.fifo_depth) *
                                  static_cast<std::size_t>(blocks) * static_cast<std::size_t>(ranks),
                              256);
  layout.p2p_sources = ranks;
  return layout;
}

// One ring as one rank sees it. int8 entries (ranks and positions are below kMaxRanks): the table of
// kMaxRings rings then adds 88 bytes to the view.
struct RingView {
  std::int8_t next;              // the rank this one sends to on this ring (Simple FIFO)
  std::int8_t prev;              // the rank it receives from
  std::int8_t position;          // its position on the ring (chunk numbering of algo::ring_*)
  std::int8_t order[kMaxRanks];  // position -> rank (ring all_gather / reduce_scatter place blocks by rank)
};
static_assert(kMaxRanks <= 127, "RingView stores ranks as int8");

// `rank`'s place on the ring `order` (position -> rank, a permutation of 0..n-1; the host checks that).
CHORUS_HOST_DEVICE constexpr RingView make_ring_view(const int* order, int n, int rank) {
  RingView ring{};
  for (int p = 0; p < n; ++p) {
    ring.order[p] = static_cast<std::int8_t>(order[p]);
    if (order[p] != rank) continue;
    ring.position = static_cast<std::int8_t>(p);
    ring.next = static_cast<std::int8_t>(order[(p + 1) % n]);
    ring.prev = static_cast<std::int8_t>(order[(p + n - 1) % n]);
  }
  return ring;
}

// The ring block `block` runs on: the rings take turns when there are more blocks than rings. Every rank
// maps a block to the same ring, so block b's FIFOs on all ranks form that one ring.
CHORUS_HOST_DEVICE constexpr int ring_of_block(int block, int rings) { return rings < 2 ? 0 : block % rings; }

struct RankView {
  int rank;
  int nranks;
  int blocks;  // blocks (CTAs) per rank taking part
  ScratchLayout layout;
  unsigned char* scratch[kMaxRanks];  // every rank's scratch base; scratch[rank] is this rank's own
  Signals* signals[kMaxRanks];        // every rank's signals; signals[rank] is this rank's own
  int rings;                          // ring orders in ring_table, 1..kMaxRings
  RingView ring_table[kMaxRings];     // this rank's place on each ring; kernels reach it through ring(block)
  RankState* state;                   // this rank's counters
  TimeoutRecord* timeout;             // host-visible record of the first timeout
  std::uint64_t timeout_ns;           // bound on every wait in the kernel (CHORUS_KERNEL_TIMEOUT_MS)
  std::uint32_t delay_seed;           // nonzero: seeded per-rank delays before waits (testing)

  // The ring block `block` (a channel) sends and receives on: the one place a kernel picks it.
  CHORUS_HOST_DEVICE const RingView& ring(int block) const { return ring_table[ring_of_block(block, rings)]; }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
