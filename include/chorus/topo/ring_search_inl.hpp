// ring_search.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by ring_search.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "ring_search.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

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

CHORUS_FUNC std::vector<double> sorted(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// True when quality a (ascending hop bandwidths) beats b.
CHORUS_FUNC bool better(const std::vector<double>& a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return false;
}

// Exhaustive: every directed ring through GPU 0 in lexicographic order; the first best one wins.
// Rings whose quality's weakest hop is below `floor` are rejected. Pruning uses alone(), an upper
// bound on every hop, which is sound because a ring's quality starts with its weakest hop.
CHORUS_FUNC std::optional<std::vector<int>> exact_ring(int n, RingPricer& pricer, double floor) {
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
CHORUS_FUNC std::vector<int> heuristic_ring(int n, RingPricer& pricer, Budget& budget) {
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

CHORUS_FUNC std::vector<double> full_capacity(const PathMatrix& paths) {
  std::vector<double> capacity(paths.links().size() * 2);
  for (std::size_t l = 0; l < paths.links().size(); ++l) {
    capacity[2 * l] = capacity[2 * l + 1] = paths.links()[l].bw_GBps;
  }
  return capacity;
}

CHORUS_FUNC Ring make_ring(std::vector<int> order, RingPricer& pricer) {
  Ring ring;
  ring.order = std::move(order);
  ring.hop_GBps = pricer.hops(ring.order);
  ring.bottleneck_GBps =
      ring.hop_GBps.empty() ? kLocalGBps : *std::min_element(ring.hop_GBps.begin(), ring.hop_GBps.end());
  return ring;
}
}  // namespace detail

CHORUS_FUNC std::vector<double> ring_hops(const PathMatrix& paths, const std::vector<int>& order) {
  const std::vector<double> capacity = detail::full_capacity(paths);
  detail::RingPricer pricer(paths, capacity);
  return pricer.hops(order);
}

CHORUS_FUNC std::vector<double> ring_quality(const PathMatrix& paths, const std::vector<int>& order) {
  return detail::sorted(ring_hops(paths, order));
}

CHORUS_FUNC bool ring_better(const std::vector<double>& a, const std::vector<double>& b) { return detail::better(a, b); }

CHORUS_FUNC RingPlan search_rings(const Topology& topo, const PathMatrix& paths, const RingSearchOptions& options) {
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

CHORUS_FUNC RingPlan search_rings(const Topology& topo, const RingSearchOptions& options) {
  return search_rings(topo, PathMatrix(topo), options);
}

CHORUS_FUNC std::vector<int> best_ring_order(const Topology& topo, const RingSearchOptions& options) {
  RingSearchOptions one = options;
  one.max_channels = 1;
  RingPlan plan = search_rings(topo, one);
  return plan.rings.empty() ? std::vector<int>{} : plan.rings.front().order;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
