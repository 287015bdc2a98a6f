// How the host backend resolves Algorithm::automatic (and picks patterns for the other
// collectives) and how finely it pipelines.
//
// Measured on the development machine (2-core AMD EPYC, 1 MiB L2 per core, 32 MiB L3, memcpy
// 20 GB/s) with a small program timing every pattern per call size, best of several runs, for
// 2, 4, 8 and 16 ranks; the machine was shared, so only clear differences were used:
//   - all_reduce: one_shot (a single step; every rank reads all n-1 peers) is fastest while
//     (n-1) * bytes <= ~64 KiB (n=2: up to 64 KiB, n=4: ~16 KiB, n=8: ~8-16 KiB, n=16: ~4 KiB).
//     Above that, with a core per rank (n=2 here) ring wins (e.g. 1 MiB: ring 67 us, two_shot
//     81 us); with more ranks than cores, every step of the ring's 2(n-1) is a trip through the
//     scheduler, and two_shot (two steps) wins by far (n=16, 1 MiB: 1.5 ms vs ring 7 ms).
//   - reduce_scatter / all_gather: same story; direct (one step) never lost when crowded, and
//     ties the ring for n=2.
//   - broadcast / reduce: binomial and chain tie within noise up to ~1 MiB, with binomial ahead
//     for 8 ranks; the pipelined chain only pays off for large messages.
//   - slice: 256 KiB pipelining slices gave 10-25% more bandwidth than 64 KiB at 4-64 MiB
//     (per-step synchronisation is visible at 64 KiB), and 512 KiB to 1 MiB gained nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>

#include "../algo/build.hpp"
#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../runtime/call_check.hpp"

CHORUS_NAMESPACE_BEGIN namespace host {

// Algorithm::automatic decided by a function instead of the measured thresholds below
// (Team::set_automatic), e.g. a model::AutomaticTuner over a calibrated fabric. Called on every
// rank for every automatic call with the call's count, element size and the communicator's size;
// it must answer every rank alike and never `automatic`.
using AutomaticChoice = std::function<Algorithm(Collective, std::size_t count, std::size_t element_size, int ranks)>;

}  CHORUS_NAMESPACE_END  // namespace chorus::host

CHORUS_NAMESPACE_BEGIN namespace host::detail {

struct Tuning {
  static constexpr std::size_t kOneShotMaxBytesTimesPeers = 64 * 1024;  // (n-1) * bytes
  static constexpr std::size_t kDirectMaxBlockBytes = 256 * 1024;      // per-rank block, uncrowded
  static constexpr std::size_t kBinomialMaxBytes = 1024 * 1024;
  static constexpr std::size_t kSliceBytes = 256 * 1024;

  // More rank threads than hardware threads: prefer patterns with few steps.
  static bool crowded(int threads) {
    static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return static_cast<unsigned>(threads) > cores;
  }
};

// A pattern and why it was chosen (CHORUS_LOG=info prints the reason).
struct PatternChoice {
  algo::Pattern pattern;
  const char* reason;
};

// The pattern Algorithm::automatic runs on a communicator of `ranks` in a team of `team_size`
// threads. `bytes` is the size of the call's count (the per-rank block for reduce_scatter,
// all_gather and all_to_all). Depends only on what every rank shares and on the machine, so all
// ranks agree.
inline PatternChoice explain_pattern(algo::Collective collective, std::size_t bytes, int ranks, int team_size) {
  using algo::Collective;
  using algo::Pattern;
  const bool crowded = Tuning::crowded(team_size);
  switch (collective) {
    case Collective::all_reduce:
      if (ranks == 1) return {Pattern::ring, "one rank: nothing to exchange"};
      if (bytes <= Tuning::kOneShotMaxBytesTimesPeers / static_cast<std::size_t>(ranks - 1)) {
        return {Pattern::one_shot, "small: (ranks-1) x bytes <= 64 KiB, one step beats the ring's 2(n-1)"};
      }
      return crowded ? PatternChoice{Pattern::two_shot, "large, more rank threads than cores: two steps beat 2(n-1)"}
                     : PatternChoice{Pattern::ring, "large, a core per rank thread: the ring moves the fewest bytes"};
    case Collective::reduce_scatter:
    case Collective::all_gather:
      if (crowded) return {Pattern::direct, "more rank threads than cores: one step"};
      return bytes <= Tuning::kDirectMaxBlockBytes ? PatternChoice{Pattern::direct, "block <= 256 KiB: one step"}
                                                   : PatternChoice{Pattern::ring, "block > 256 KiB: the ring"};
    case Collective::broadcast:
    case Collective::reduce:
      return bytes <= Tuning::kBinomialMaxBytes
                 ? PatternChoice{Pattern::binomial, "<= 1 MiB: the binomial tree's log2(n) rounds"}
                 : PatternChoice{Pattern::chain, "> 1 MiB: the pipelined chain"};
    case Collective::all_to_all: return {Pattern::pairwise, "the only all_to_all pattern"};
  }
  return {Pattern::ring, "unknown collective"};
}

inline algo::Pattern choose_pattern(algo::Collective collective, std::size_t bytes, int ranks, int team_size) {
  return explain_pattern(collective, bytes, ranks, team_size).pattern;
}

// The pattern a Team::set_automatic function picks for a call, refusing an answer no schedule has.
inline algo::Pattern ask_automatic(const AutomaticChoice& choose, const runtime::CollectiveArgs& args,
                                   std::size_t element_size, int ranks, const RankName& rank) {
  const Algorithm algorithm = choose(args.collective, args.count, element_size, ranks);
  if (algorithm == Algorithm::automatic || !supports(args.collective, algorithm)) {
    throw make_error(ErrorCode::invalid_argument, traits(args.collective).name, rank,
                     "the team's automatic function (Team::set_automatic) answered ", to_string(algorithm),
                     ", which is not an algorithm of ", to_string(args.collective), " (choose from ",
                     algorithm_choices(args.collective), ")");
  }
  return algo::pattern_for(algorithm);
}

inline std::size_t slice_elements(std::size_t element_size) { return Tuning::kSliceBytes / element_size; }

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
