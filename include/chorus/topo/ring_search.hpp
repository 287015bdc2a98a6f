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

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "bandwidth.hpp"
#include "path.hpp"
#include "topology.hpp"

namespace chorus::topo {

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

namespace detail {
// Prices rings against per-direction link capacities (index 2*link + 0 when a hop crosses the
// link from its a end, + 1 from its b end).
class RingPricer {
 public:
  RingPricer(const PathMatrix& paths, const std::vector<double>& capacity)
      : paths_(paths), capacity_(capacity), load_(capacity.size(), 0) {}

  // What a hop could get if nothing else on its ring shared its links: an upper bound.
  double alone(int a, int b) const {
    const Path& path = paths_.gpu(a, b);
    double w = path.bw_GBps;
    for (std::size_t h = 0; h < path.links.size(); ++h) w = std::min(w, capacity_[directed(path, h)]);
    return w;
  }

  // Each hop's bandwidth with the ring's own hops sharing the directed links they cross.
  std::vector<double> hops(const std::vector<int>& order) {
    const std::size_t n = order.size();
    std::vector<double> out;
    if (n < 2) return out;
    count(order, +1);
    for (std::size_t i = 0; i < n; ++i) {
      const Path& path = paths_.gpu(order[i], order[(i + 1) % n]);
      double w = path.bw_GBps;
      for (std::size_t h = 0; h < path.links.size(); ++h) {
        const int k = directed(path, h);
        w = std::min(w, capacity_[k] / load_[k]);
      }
      out.push_back(w);
    }
    count(order, -1);
    return out;
  }

  // How many hops of the ring cross each directed link.
  std::vector<int> loads(const std::vector<int>& order) {
    count(order, +1);
    std::vector<int> out = load_;
    count(order, -1);
    return out;
  }

 private:
  int directed(const Path& path, std::size_t hop) const {
    const Link& link = paths_.links()[path.links[hop]];
    return 2 * path.links[hop] + (path.route[hop] == link.a ? 0 : 1);
  }
  void count(const std::vector<int>& order, int delta) {
    const std::size_t n = order.size();
    if (n < 2) return;
    for (std::size_t i = 0; i < n; ++i) {
      const Path& path = paths_.gpu(order[i], order[(i + 1) % n]);
      for (std::size_t h = 0; h < path.links.size(); ++h) load_[directed(path, h)] += delta;
    }
  }

  const PathMatrix& paths_;
  const std::vector<double>& capacity_;
  std::vector<int> load_;
};

// Work left to the heuristic, in hop pricings.
struct Budget {
  long long left = 0;
  bool spent() const { return left <= 0; }
};

inline std::vector<double> sorted(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// True when quality a (ascending hop bandwidths) beats b.
inline bool better(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return false;
}

// Exhaustive: every directed ring through GPU 0 in lexicographic order; the first best one wins.
// Rings whose quality's weakest hop is below `floor` are rejected. Pruning uses alone(), an upper
// bound on every hop, which is sound because a ring's quality starts with its weakest hop.
inline std::optional<std::vector<int>> exact_ring(int n, RingPricer& pricer, double floor) {
  std::optional<std::vector<int>> best;
  std::vector<double> best_quality;
  std::vector<int> order{0};
  std::vector<bool> used(static_cast<std::size_t>(n), false);
  used[0] = true;
  const auto bar = [&] { return best ? std::max(floor, best_quality.front()) : floor; };
  const auto visit = [&](const auto& self, double weakest) -> void {
    if (weakest < bar()) return;
    if (static_cast<int>(order.size()) == n) {
      if (n > 1 && pricer.alone(order.back(), order.front()) < bar()) return;
      std::vector<double> quality = sorted(pricer.hops(order));
      if (!quality.empty() && quality.front() < floor) return;
      if (!best || better(quality, best_quality)) {
        best = order;
        best_quality = std::move(quality);
      }
      return;
    }
    for (int next = 1; next < n; ++next) {
      if (used[next]) continue;
      used[next] = true;
      order.push_back(next);
      self(self, std::min(weakest, pricer.alone(order[order.size() - 2], next)));
      order.pop_back();
      used[next] = false;
    }
  };
  visit(visit, kLocalGBps * 1000);
  return best;
}

// Greedy construction, then 2-opt segment reversals while they improve the quality and the
// budget lasts. The greedy ring always completes, so there is always an answer.
inline std::vector<int> heuristic_ring(int n, RingPricer& pricer, Budget& budget) {
  std::vector<int> order{0};
  std::vector<bool> used(static_cast<std::size_t>(n), false);
  used[0] = true;
  while (static_cast<int>(order.size()) < n) {
    int pick = -1;
    double widest = 0.0;
    for (int next = 0; next < n; ++next) {
      if (used[next]) continue;
      const double w = pricer.alone(order.back(), next);
      if (pick < 0 || w > widest) {
        pick = next;
        widest = w;
      }
    }
    budget.left -= n - static_cast<long long>(order.size());
    used[pick] = true;
    order.push_back(pick);
  }
  std::vector<double> quality = sorted(pricer.hops(order));
  // Every accepted move strictly improves the quality, so this ends; the round cap and the budget
  // only bound the time on large inputs.
  std::vector<int> candidate;
  for (int round = 0; round < 2 * n && !budget.spent(); ++round) {
    bool improved = false;
    for (int i = 1; i < n - 1 && !improved && !budget.spent(); ++i) {
      for (int j = i + 1; j < n && !improved && !budget.spent(); ++j) {
        candidate = order;
        std::reverse(candidate.begin() + i, candidate.begin() + j + 1);
        std::vector<double> q = sorted(pricer.hops(candidate));
        budget.left -= n;
        if (better(q, quality)) {
          order.swap(candidate);
          quality = std::move(q);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return order;
}

inline std::vector<double> full_capacity(const PathMatrix& paths) {
  std::vector<double> capacity(paths.links().size() * 2);
  for (std::size_t l = 0; l < paths.links().size(); ++l) {
    capacity[2 * l] = capacity[2 * l + 1] = paths.links()[l].bw_GBps;
  }
  return capacity;
}

inline Ring make_ring(std::vector<int> order, RingPricer& pricer) {
  Ring ring;
  ring.order = std::move(order);
  ring.hop_GBps = pricer.hops(ring.order);
  ring.bottleneck_GBps =
      ring.hop_GBps.empty() ? kLocalGBps : *std::min_element(ring.hop_GBps.begin(), ring.hop_GBps.end());
  return ring;
}
}  // namespace detail

// A ring's hop bandwidths on an otherwise idle machine, hops sharing a directed link splitting it.
inline std::vector<double> ring_hops(const PathMatrix& paths, const std::vector<int>& order) {
  const std::vector<double> capacity = detail::full_capacity(paths);
  detail::RingPricer pricer(paths, capacity);
  return pricer.hops(order);
}

// The quality of a ring order: ring_hops() ascending (compare two with ring_better).
inline std::vector<double> ring_quality(const PathMatrix& paths, const std::vector<int>& order) {
  return detail::sorted(ring_hops(paths, order));
}

inline bool ring_better(const std::vector<double>& a, const std::vector<double>& b) { return detail::better(a, b); }

inline RingPlan search_rings(const Topology& topo, const PathMatrix& paths, const RingSearchOptions& options = {}) {
  RingPlan plan;
  const int n = paths.gpu_count();
  if (n == 0) return plan;
  const std::vector<double> capacity = detail::full_capacity(paths);
  detail::RingPricer idle(paths, capacity);
  plan.exact = n <= options.exact_limit;
  detail::Budget budget{options.work_budget};
  std::vector<int> first = plan.exact ? *detail::exact_ring(n, idle, 0.0) : detail::heuristic_ring(n, idle, budget);
  plan.rings.push_back(detail::make_ring(first, idle));
  plan.budget_spent = budget.spent();
  if (n == 1) {
    plan.channel_GBps = kLocalGBps;
    return plan;
  }
  double cap = options.channel_cap_GBps;
  if (cap <= 0) {
    int sm = 0;
    for (int g = 0; g < n; ++g) {
      const int s = topo.nodes[paths.gpu_node(g)].sm;
      if (s > 0 && (sm == 0 || s < sm)) sm = s;
    }
    cap = max_channel_GBps(sm);
  }
  const double speed = std::min(plan.rings[0].bottleneck_GBps, cap);
  plan.channel_GBps = speed;
  if (!(speed > 0)) return plan;
  // Further channels: best rings in what the earlier ones left, as long as they still run at speed.
  std::vector<double> residual = capacity;
  detail::RingPricer left(paths, residual);
  const auto take = [&](const std::vector<int>& order) {
    const std::vector<int> load = left.loads(order);
    for (std::size_t k = 0; k < load.size(); ++k) residual[k] -= load[k] * speed;
  };
  take(first);
  const double floor = speed * (1 - 1e-9);  // absorbs rounding in the subtractions
  const auto fits = [&](const std::vector<int>& order) {
    const std::vector<double> hops = left.hops(order);
    return *std::min_element(hops.begin(), hops.end()) >= floor;
  };
  while (static_cast<int>(plan.rings.size()) < options.max_channels) {
    std::optional<std::vector<int>> next;
    if (plan.exact) {
      next = detail::exact_ring(n, left, floor);
    } else if (!budget.spent()) {
      std::vector<int> candidate = detail::heuristic_ring(n, left, budget);
      if (fits(candidate)) next = std::move(candidate);
    } else {
      for (const Ring& earlier : plan.rings) {
        if (fits(earlier.order)) {
          next = earlier.order;
          break;
        }
      }
    }
    if (!next) break;
    take(*next);
    plan.rings.push_back(detail::make_ring(*next, idle));
  }
  plan.budget_spent = budget.spent();
  return plan;
}

inline RingPlan search_rings(const Topology& topo, const RingSearchOptions& options = {}) {
  return search_rings(topo, PathMatrix(topo), options);
}

// The best ring as algo::Options::ring_order: position p of the ring holds GPU (rank) order[p],
// so with rank r = GPU r every ring hop runs over the link the search chose. Empty without GPUs.
inline std::vector<int> best_ring_order(const Topology& topo, const RingSearchOptions& options = {}) {
  RingSearchOptions one = options;
  one.max_channels = 1;
  RingPlan plan = search_rings(topo, one);
  return plan.rings.empty() ? std::vector<int>{} : plan.rings.front().order;
}

}  // namespace chorus::topo
