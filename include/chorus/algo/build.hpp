// One entry point for every schedule generator: build(collective, pattern, ...) and the table of
// which patterns serve which collective.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "../core/algorithm.hpp"
#include "../core/error.hpp"
#include "binomial.hpp"
#include "chain.hpp"
#include "direct.hpp"
#include "halving_doubling.hpp"
#include "one_shot.hpp"
#include "pairwise.hpp"
#include "ring.hpp"
#include "schedule.hpp"
#include "tree.hpp"
#include "two_shot.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// The table of which pattern serves which collective is Algorithm's (core/algorithm.hpp).
inline bool supports(Collective collective, Pattern pattern) {
  return supports(collective, algorithm_of(pattern));
}

// The pattern behind a user-facing Algorithm. `automatic` is the tuner's to resolve.
inline Pattern pattern_for(Algorithm algorithm) {
  const int value = static_cast<int>(algorithm);
  if (value > 0 && value < kAlgorithmCount) return static_cast<Pattern>(value - 1);
  throw Error(ErrorCode::invalid_argument,
              chorus::detail::concat("chorus::algo::pattern_for: algorithm ", to_string(algorithm),
                             " has no fixed pattern; resolve it first"));
}

// `root` matters to broadcast and reduce only; `count` is as passed to the collective call.
CHORUS_FUNC Schedule build(Collective collective, Pattern pattern, int ranks, std::size_t count, int root,
                      const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule build(Collective collective, Pattern pattern, int ranks, std::size_t count, int root,
                      const Options& options) {
  if (!supports(collective, pattern)) {
    throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::algo::build: ", to_string(collective),
                                                       " has no ", to_string(pattern), " schedule"));
  }
  switch (collective) {
    case Collective::all_reduce:
      switch (pattern) {
        case Pattern::ring: return ring_all_reduce(ranks, count, options);
        case Pattern::tree: return tree_all_reduce(ranks, count, options);
        case Pattern::halving_doubling: return halving_doubling_all_reduce(ranks, count, options);
        case Pattern::one_shot: return one_shot_all_reduce(ranks, count, options);
        default: return two_shot_all_reduce(ranks, count, options);
      }
    case Collective::reduce_scatter:
      return pattern == Pattern::ring ? ring_reduce_scatter(ranks, count, options)
                                      : direct_reduce_scatter(ranks, count, options);
    case Collective::all_gather:
      return pattern == Pattern::ring ? ring_all_gather(ranks, count, options)
                                      : direct_all_gather(ranks, count, options);
    case Collective::broadcast:
      return pattern == Pattern::chain ? chain_broadcast(ranks, count, root, options)
                                       : binomial_broadcast(ranks, count, root, options);
    case Collective::reduce:
      return pattern == Pattern::chain ? chain_reduce(ranks, count, root, options)
                                       : binomial_reduce(ranks, count, root, options);
    case Collective::all_to_all: return pairwise_all_to_all(ranks, count, options);
  }
  throw Error(ErrorCode::internal, "chorus::algo::build: unknown collective");
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
