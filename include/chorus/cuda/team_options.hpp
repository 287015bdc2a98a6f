// The options of a team of chorus's CUDA kernels, one struct for every Device (cuda::TeamOptions on GPUs,
// cuda::twin::Options on the CPU twin) with the device's defaults, and their one validation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/partition.hpp"
#include "kernel/rank_view.hpp"
#include "kernel_choice.hpp"
#include "ring_orders.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class Device>
struct BasicTeamOptions {
  int blocks = Device::kDefaultBlocks;                         // blocks (channels) per rank, before the occupancy limit
  int threads = Device::kDefaultThreads;                       // threads per block (the twin's lanes)
  std::size_t staging_bytes = Device::kDefaultStagingBytes;    // one-shot / two-shot staging per rank
  std::size_t ll_bytes = Device::kDefaultLlBytes;              // LL lines per rank
  KernelCrossovers crossovers{};                               // where Algorithm::automatic switches kernels
  std::size_t fifo_slot_bytes = Device::kDefaultFifoSlotBytes;  // Simple FIFO slot (ring, chain, tree links, p2p)
  int fifo_depth = 4;                                          // Simple FIFO slots per block (a power of two >= 2)
  // Channel rings (ring_orders.hpp): block b runs on ring_orders[b % size], each position -> rank. Empty:
  // on GPUs of their own, the rings topo::search_rings finds for these devices (topology_rings.hpp), the
  // identity ring if that fails (ring_source() says why); virtual ranks: the identity ring (one GPU).
  RingOrders ring_orders;
  std::uint32_t delay_seed = 0;  // nonzero: seeded per-rank delays before waits (testing)
};

// A refused option: "chorus::<call>: ..." for a team made by one caller (rank < 0), "chorus::<call> on rank r:
// ..." for a rank of a communicator made collectively.
template <class... Parts>
Error option_error(const char* call, int rank, const Parts&... parts) {
  if (rank < 0) return Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ", parts...));
  return make_error(ErrorCode::invalid_argument, call, rank, parts...);
}

// What the options alone decide, for `ranks` ranks: `call` and `rank` (or -1) name who is refused.
template <class Device>
void check_team_options(const BasicTeamOptions<Device>& options, int ranks, const char* call, int rank) {
  if (ranks < 1 || ranks > kernel::kMaxRanks) {
    throw option_error(call, rank, "ranks must be 1..", kernel::kMaxRanks, ", got ", ranks);
  }
  if (options.threads < Device::kMinThreads || options.threads > Device::kMaxThreads || options.blocks < 1 ||
      options.blocks > kernel::kMaxBlocks) {
    throw option_error(call, rank, "threads must be ", Device::kMinThreads, "..", Device::kMaxThreads,
                     " and blocks 1..", kernel::kMaxBlocks, ", got ", options.threads, " and ", options.blocks);
  }
  // With one slot every rank would hold its full outgoing slot while waiting for the next rank, which
  // waits the same way: a cycle. Two slots let each step's send go out while the last is still read.
  if (!kernel::valid_fifo_depth(options.fifo_depth) || options.fifo_slot_bytes < kernel::kPackBytes) {
    throw option_error(call, rank,
                     "the FIFO needs a power-of-two number of slots, at least 2, of 16 bytes or more, got ", options.fifo_depth,
                     " of ", options.fifo_slot_bytes);
  }
  check_crossovers(options.crossovers, call);
  if (!options.ring_orders.empty()) check_ring_orders(call, options.ring_orders, ranks);
}

// What the options decide once the blocks per rank are known: the largest element (8 bytes) must leave
// two-shot a non-empty round and LL a line per source.
template <class Device>
void check_team_sizes(const BasicTeamOptions<Device>& options, int ranks, int blocks, const char* call, int rank) {
  if (kernel::two_shot_round_elements(kernel::segment_elements(options.staging_bytes, blocks, 8), ranks, blocks, 2) == 0 ||
      kernel::ll_capacity_lines(options.ll_bytes, ranks) < 2) {
    throw option_error(call, rank, "staging_bytes ", options.staging_bytes, " or ll_bytes ",
                     options.ll_bytes, " too small for ", ranks, " ranks x ", blocks, " blocks");
  }
}

template <class Device>
kernel::ScratchLayout team_layout(const BasicTeamOptions<Device>& options, int ranks, int blocks) {
  return kernel::with_p2p_region(
      kernel::make_layout(options.staging_bytes, options.ll_bytes, options.fifo_slot_bytes, options.fifo_depth, blocks), ranks, blocks);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
