// How the host backend resolves Algorithm::automatic and how finely it pipelines. Constants were
// measured with bench/host_crossover.cpp (see the comment on each); they depend on the machine
// only mildly, because every rank shares one memory system.
#pragma once

#include <cstddef>

#include "../algo/build.hpp"
#include "../core/algorithm.hpp"

namespace chorus::host::detail {

struct Tuning {
  // all_reduce: one_shot (one step, every rank reads all n-1 peers) beats ring (2(n-1) steps,
  // each a synchronisation) while the message is small. Measured crossover: see docs/benchmarks.md.
  static constexpr std::size_t kOneShotMaxBytes = 64 * 1024;
  // reduce_scatter / all_gather: direct (one step) below this many bytes per rank block, ring above.
  static constexpr std::size_t kDirectMaxBlockBytes = 64 * 1024;
  // broadcast / reduce: binomial (log n steps) below, chain (pipelined, full bandwidth) above.
  static constexpr std::size_t kBinomialMaxBytes = 64 * 1024;
  // Pipelining slice: big enough that per-step synchronisation is noise, small enough that a
  // slice a neighbour just wrote is still in cache when it is read.
  static constexpr std::size_t kSliceBytes = 64 * 1024;
};

// The pattern a call runs. `bytes` is the size of the call's count (per-rank block for
// reduce_scatter, all_gather and all_to_all).
inline algo::Pattern choose_pattern(algo::Collective collective, Algorithm algorithm, std::size_t bytes, int ranks) {
  using algo::Collective;
  using algo::Pattern;
  switch (collective) {
    case Collective::all_reduce:
      if (algorithm != Algorithm::automatic) return algo::pattern_for(algorithm);
      return ranks > 1 && bytes <= Tuning::kOneShotMaxBytes ? Pattern::one_shot : Pattern::ring;
    case Collective::reduce_scatter:
    case Collective::all_gather: return bytes <= Tuning::kDirectMaxBlockBytes ? Pattern::direct : Pattern::ring;
    case Collective::broadcast:
    case Collective::reduce: return bytes <= Tuning::kBinomialMaxBytes ? Pattern::binomial : Pattern::chain;
    case Collective::all_to_all: return Pattern::pairwise;
  }
  return Pattern::ring;
}

inline std::size_t slice_elements(std::size_t element_size) { return Tuning::kSliceBytes / element_size; }

}  // namespace chorus::host::detail
