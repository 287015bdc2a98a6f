// The public algorithm selector: Algorithm::automatic lets the backend choose (the tuner), any
// other value forces that communication pattern. Every collective takes one; each pattern serves
// only some collectives (see supports()).
#pragma once

#include "collective.hpp"
#include "config.hpp"

CHORUS_NAMESPACE_BEGIN

// After `automatic`, one value per algo::Pattern, in the same order.
enum class Algorithm { automatic, ring, tree, halving_doubling, one_shot, two_shot, direct, chain, binomial, pairwise };

inline constexpr int kAlgorithmCount = 10;

inline const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::automatic: return "automatic";
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::halving_doubling: return "halving_doubling";
    case Algorithm::one_shot: return "one_shot";
    case Algorithm::two_shot: return "two_shot";
    case Algorithm::direct: return "direct";
    case Algorithm::chain: return "chain";
    case Algorithm::binomial: return "binomial";
    case Algorithm::pairwise: return "pairwise";
  }
  return "unknown";
}

// Which algorithms implement which collective (automatic serves all):
//   all_reduce: ring, tree, halving_doubling, one_shot, two_shot
//   reduce_scatter, all_gather: ring, direct
//   broadcast, reduce: chain, binomial
//   all_to_all: pairwise
inline bool supports(Collective collective, Algorithm algorithm) {
  using A = Algorithm;
  if (algorithm == A::automatic) return true;
  switch (collective) {
    case Collective::all_reduce:
      return algorithm == A::ring || algorithm == A::tree || algorithm == A::halving_doubling ||
             algorithm == A::one_shot || algorithm == A::two_shot;
    case Collective::reduce_scatter:
    case Collective::all_gather: return algorithm == A::ring || algorithm == A::direct;
    case Collective::broadcast:
    case Collective::reduce: return algorithm == A::chain || algorithm == A::binomial;
    case Collective::all_to_all: return algorithm == A::pairwise;
  }
  return false;
}

// "ring, tree, ..." for error messages: the algorithms that implement `collective`.
inline const char* algorithm_choices(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "automatic, ring, tree, halving_doubling, one_shot, two_shot";
    case Collective::reduce_scatter:
    case Collective::all_gather: return "automatic, ring, direct";
    case Collective::broadcast:
    case Collective::reduce: return "automatic, chain, binomial";
    case Collective::all_to_all: return "automatic, pairwise";
  }
  return "automatic";
}

CHORUS_NAMESPACE_END  // namespace chorus
