// How mpi::Comm resolves Algorithm::automatic and how finely it pipelines. Every message costs an
// MPI latency (about a microsecond within a node, several across a network) on top of its bytes,
// so few steps win for small calls and the bandwidth-optimal ring for large ones:
//   - all_reduce: one_shot (one round: every rank sends its whole buffer to every peer) while the
//     n-1 copies stay small, then halving_doubling (log2 n rounds) up to a few hundred KiB per
//     rank, then ring (2(n-1) rounds, each moving 1/n of the data).
//   - reduce_scatter / all_gather: direct (one round) for small blocks, ring above.
//   - broadcast / reduce: binomial (log2 n rounds) for small calls, the pipelined chain above.
//   - all_to_all: pairwise, the only choice.
// The thresholds depend only on the call and the communicator size, so every rank agrees. The cost
// model (include/chorus/model/, to come) will replace these rules with per-machine figures.
#pragma once

#include <cstddef>

#include "../algo/schedule.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

struct Tuning {
  static constexpr std::size_t kOneShotMaxBytesTimesPeers = 64 * 1024;  // (n-1) * bytes
  static constexpr std::size_t kHalvingDoublingMaxBytes = 512 * 1024;
  static constexpr std::size_t kDirectMaxBlockBytes = 64 * 1024;
  static constexpr std::size_t kBinomialMaxBytes = 256 * 1024;
  // Pipelining slice: large enough that a message's latency is small beside its bytes.
  static constexpr std::size_t kSliceBytes = 512 * 1024;
};

// `bytes`: the call's count in bytes (the per-rank block for reduce_scatter, all_gather, all_to_all).
inline algo::Pattern choose_pattern(Collective collective, std::size_t bytes, int ranks) {
  using algo::Pattern;
  switch (collective) {
    case Collective::all_reduce:
      if (ranks <= 1) return Pattern::ring;
      if (bytes <= Tuning::kOneShotMaxBytesTimesPeers / static_cast<std::size_t>(ranks - 1)) return Pattern::one_shot;
      return bytes <= Tuning::kHalvingDoublingMaxBytes ? Pattern::halving_doubling : Pattern::ring;
    case Collective::reduce_scatter:
    case Collective::all_gather: return bytes <= Tuning::kDirectMaxBlockBytes ? Pattern::direct : Pattern::ring;
    case Collective::broadcast:
    case Collective::reduce: return bytes <= Tuning::kBinomialMaxBytes ? Pattern::binomial : Pattern::chain;
    case Collective::all_to_all: return Pattern::pairwise;
  }
  return Pattern::ring;
}

inline std::size_t slice_elements(std::size_t element_size) { return Tuning::kSliceBytes / element_size; }

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
