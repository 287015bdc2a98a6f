// Ring search: orders of all GPUs for ring collectives, and how many rings (channels) the links
// can carry at once.
//
// Quality of one ring is the sorted list of its hop bandwidths, compared lexicographically: the
// best ring maximises its weakest hop, then its second weakest, and so on. So it uses every NVLink
// pair it can and crosses a socket link as few times as possible. A hop gets its path's bandwidth
// (PathMatrix), except that hops of one ring crossing the same physical link in the same direction
// (two hops up one switch uplink) split it. Ties go to the lexicographically smallest order, and
// every ring starts at GPU 0, so the same topology always gives the same rings.
//
// Up to RingSearchOptions::exact_limit GPUs (8 by default) the search is exact: it enumerates
// every directed ring through GPU 0, pruning partial rings whose weakest hop is already below the
// best ring's. Beyond that it is a documented heuristic: a greedy ring (from GPU 0 always take the
// widest hop to an unvisited GPU, lowest index on ties), then 2-opt moves (reverse a segment)
// while any move improves the quality, scanned in a fixed order.
//
// The heuristic has a work budget (RingSearchOptions::work_budget, counted in hop pricings over the
// whole search): one 2-opt round prices n^2/2 rings of n hops, so unbounded it took 38 s on 800
// GPUs and hours on the 4096 the XML reader accepts. The default pays for 256 rounds at 64 GPUs,
// so machines of up to a few dozen GPUs get the rings they always got; past it the 2-opt stops
// where it is (the ring is still a valid ring, only less polished), and further channels may only
// repeat an earlier ring, which costs n to check and is what NVSwitch machines take anyway.
//
// Channels: the first ring runs at speed s = min(its weakest hop, the per-channel cap of NCCL's
// speed ladder for the GPU generation). Each further channel is the best ring in the *residual*
// capacities (every directed link loses s per hop that crosses it) whose weakest hop still gets s;
// the search stops when none does or at max_channels. An NVSwitch machine fits several copies of
// one ring (H100: 370.8/60 -> 6 rings); a hybrid cube-mesh fits a ring and its reverse (they use
// opposite directions of each link).
#pragma once

#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"
#include "path.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct Ring {
  std::vector<int> order;         // GPU indices; order[0] == 0
  std::vector<double> hop_GBps;   // hop i is order[i] -> order[(i + 1) % n]
  double bottleneck_GBps = 0.0;   // the weakest hop (kLocalGBps for a single GPU)
};

struct RingPlan {
  std::vector<Ring> rings;        // one per channel, best first; rings may repeat
  double channel_GBps = 0.0;      // the speed every channel runs at
  bool exact = false;             // rings[0] is proven optimal (exhaustive search)
  bool budget_spent = false;      // the heuristic stopped at RingSearchOptions::work_budget
  double total_GBps() const { return channel_GBps * static_cast<double>(rings.size()); }
};

struct RingSearchOptions {
  int exact_limit = 8;            // exhaustive up to this many GPUs
  int max_channels = 32;          // NCCL's search stops at half of its 64 channels
  double channel_cap_GBps = 0.0;  // 0: max_channel_GBps() of the slowest GPU generation
  // Hop pricings the heuristic may spend over all channels (the first greedy ring always
  // completes, n^2/2 more at most). 2^25 is about two seconds on 4096 GPUs.
  long long work_budget = 1LL << 25;
};

// A ring's hop bandwidths on an otherwise idle machine, hops sharing a directed link splitting it.
CHORUS_FUNC std::vector<double> ring_hops(const PathMatrix& paths, const std::vector<int>& order);

// The quality of a ring order: ring_hops() ascending (compare two with ring_better).
CHORUS_FUNC std::vector<double> ring_quality(const PathMatrix& paths, const std::vector<int>& order);

CHORUS_FUNC bool ring_better(const std::vector<double>& a, const std::vector<double>& b);

CHORUS_FUNC RingPlan search_rings(const Topology& topo, const PathMatrix& paths, const RingSearchOptions& options = {});

CHORUS_FUNC RingPlan search_rings(const Topology& topo, const RingSearchOptions& options = {});

// The best ring as algo::Options::ring_order: position p of the ring holds GPU (rank) order[p],
// so with rank r = GPU r every ring hop runs over the link the search chose. Empty without GPUs.
CHORUS_FUNC std::vector<int> best_ring_order(const Topology& topo, const RingSearchOptions& options = {});

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "ring_search_inl.hpp"
#endif
