// path.hpp's bodies: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by path.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "path.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

CHORUS_FUNC SmiClassifier::SmiClassifier(const Topology& topo)
    : topo_(topo), bonds_(topo.nodes.size()), chains_(topo.nodes.size()) {
  // Each node's chain up to its CPU, once: PathMatrix asks about every pair.
  for (std::size_t node = 0; node < topo.nodes.size(); ++node) {
    std::vector<int>& chain = chains_[node];
    for (int n = static_cast<int>(node); n >= 0 && chain.size() <= topo.nodes.size(); n = topo.nodes[n].parent) {
      chain.push_back(n);
    }
  }
  for (const NvLinkBond& bond : topo.nvlinks) {
    if (bond.a < 0 || bond.b < 0 || bond.a >= static_cast<int>(bonds_.size()) ||
        bond.b >= static_cast<int>(bonds_.size())) {
      continue;
    }
    bonds_[bond.a].push_back({bond.b, bond.count});
    bonds_[bond.b].push_back({bond.a, bond.count});
  }
}

CHORUS_FUNC SmiToken SmiClassifier::operator()(int a, int b) const {
  if (a == b) return SmiToken{SmiClass::self, 0};
  if (topo_.nodes[a].kind == NodeKind::gpu && topo_.nodes[b].kind == NodeKind::gpu) {
    // Links joining the pair directly, plus, for each NVSwitch both reach, the narrower side.
    int links = 0;
    for (const auto& [other, count] : bonds_[a]) {
      if (other == b) {
        links += count;
      } else if (topo_.nodes[other].kind == NodeKind::nvswitch) {
        for (const auto& [far, far_count] : bonds_[b]) {
          if (far == other) links += std::min(count, far_count);
        }
      }
    }
    if (links > 0) return SmiToken{SmiClass::nvlink, links};
  }
  return pcie(a, b);
}

CHORUS_FUNC SmiToken SmiClassifier::pcie(int a, int b) const {
  const std::vector<int>& up_a = chains_[a];
  const std::vector<int>& up_b = chains_[b];
  const int cpu_a = up_a.empty() ? -1 : up_a.back();
  const int cpu_b = up_b.empty() ? -1 : up_b.back();
  if (cpu_a != cpu_b || cpu_a < 0 || topo_.nodes[cpu_a].kind != NodeKind::cpu) return SmiToken{SmiClass::sys, 0};
  // Walk down from the shared CPU while the chains agree.
  std::size_t ia = up_a.size() - 1, ib = up_b.size() - 1;
  while (ia > 0 && ib > 0 && up_a[ia - 1] == up_b[ib - 1]) {
    --ia;
    --ib;
  }
  const int lca = up_a[ia];
  if (topo_.nodes[lca].kind == NodeKind::cpu) {
    // ia, ib >= 1 here: a and b are distinct nodes below the CPU.
    const bool same = topo_.nodes[up_a[ia - 1]].host_bridge == topo_.nodes[up_b[ib - 1]].host_bridge;
    return SmiToken{same ? SmiClass::phb : SmiClass::node, 0};
  }
  // Switches on the route: those strictly above a and b up to and including the LCA.
  int switches = 0;
  for (std::size_t k = 1; k <= ia; ++k) switches += topo_.nodes[up_a[k]].kind == NodeKind::pci_switch;
  for (std::size_t k = 1; k < ib; ++k) switches += topo_.nodes[up_b[k]].kind == NodeKind::pci_switch;
  return SmiToken{switches <= 1 ? SmiClass::pix : SmiClass::pxb, 0};
}

namespace detail {
struct Adjacent {
  int node;
  int link;  // index into the links vector
};

CHORUS_FUNC std::vector<std::vector<Adjacent>> adjacency(const Topology& topo, const std::vector<Link>& all) {
  std::vector<std::vector<Adjacent>> adj(topo.nodes.size());
  for (int l = 0; l < static_cast<int>(all.size()); ++l) {
    const Link& link = all[l];
    if (link.b < 0) continue;  // network ports lead off the machine
    adj[link.a].push_back({link.b, l});
    adj[link.b].push_back({link.a, l});
  }
  return adj;
}

// Routes from `source` to every node under NCCL's rule; returns the predecessor link per node.
CHORUS_FUNC void route_from(const Topology& topo, const std::vector<Link>& all,
                            const std::vector<std::vector<Adjacent>>& adj, int source, std::vector<int>& prev_node,
                            std::vector<int>& prev_link, std::vector<int>& hops, std::vector<double>& bw) {
  const std::size_t n = topo.nodes.size();
  prev_node.assign(n, -1);
  prev_link.assign(n, -1);
  hops.assign(n, -1);
  bw.assign(n, 0.0);
  std::vector<bool> done(n, false);
  hops[source] = 0;
  bw[source] = kLocalGBps * 1000;  // wider than any link: the first hop sets the bottleneck
  const bool source_gpu = topo.nodes[source].kind == NodeKind::gpu;
  // Settles nodes fewest hops first, then widest, then lowest index: a heap with stale entries
  // skipped, so a 4096-GPU machine costs seconds, not the hours of a scan per settled node.
  using Key = std::tuple<int, double, int>;  // (hops, -bw, node)
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> queue;
  queue.emplace(0, -bw[source], source);
  while (!queue.empty()) {
    const auto [key_hops, key_bw, u] = queue.top();
    queue.pop();
    if (done[u] || key_hops != hops[u] || -key_bw != bw[u]) continue;
    done[u] = true;
    const NodeKind kind = topo.nodes[u].kind;
    bool through_gpu = false;
    if (u != source) {
      if (kind == NodeKind::nic) continue;
      if (kind == NodeKind::gpu) {
        // NVB: only a GPU reached in one direct NVLink hop from a GPU source, onward by NVLink.
        if (!source_gpu || hops[u] != 1 || all[prev_link[u]].kind != LinkKind::nvlink) continue;
        through_gpu = true;
      }
    }
    for (const Adjacent& next : adj[u]) {
      const Link& link = all[next.link];
      if (through_gpu && (link.kind != LinkKind::nvlink || topo.nodes[next.node].kind != NodeKind::gpu)) continue;
      if (done[next.node]) continue;
      const int h = hops[u] + 1;
      const double b = std::min(bw[u], link.bw_GBps);
      if (hops[next.node] < 0 || h < hops[next.node] || (h == hops[next.node] && b > bw[next.node])) {
        hops[next.node] = h;
        bw[next.node] = b;
        prev_node[next.node] = u;
        prev_link[next.node] = next.link;
        queue.emplace(h, -b, next.node);
      }
    }
  }
}

CHORUS_FUNC PathType classify_route(const Topology& topo, const std::vector<Link>& all,
                                    const std::vector<int>& route, const std::vector<int>& route_links) {
  PathType type = PathType::loc;
  for (int l : route_links) {
    switch (all[l].kind) {
      case LinkKind::nvlink: type = worse(type, PathType::nvl); break;
      case LinkKind::pcie: type = worse(type, PathType::pix); break;
      case LinkKind::inter_cpu: type = worse(type, PathType::sys); break;
      case LinkKind::network: type = worse(type, PathType::net); break;
    }
  }
  int switches = 0;
  for (std::size_t k = 1; k + 1 < route.size(); ++k) {
    switch (topo.nodes[route[k]].kind) {
      case NodeKind::gpu: type = worse(type, PathType::nvb); break;
      case NodeKind::cpu: type = worse(type, PathType::phb); break;
      case NodeKind::pci_switch: ++switches; break;
      default: break;
    }
  }
  if (switches >= 2) type = worse(type, PathType::pxb);
  return type;
}
}  // namespace detail

CHORUS_FUNC PathMatrix::PathMatrix(const Topology& topo)
    : gpus_(topo.gpu_nodes()), nics_(topo.nic_nodes()), links_(chorus::topo::links(topo)) {
  const std::vector<Link>& all = links_;
  const auto adj = detail::adjacency(topo, all);
  std::vector<int> devices = gpus_;
  devices.insert(devices.end(), nics_.begin(), nics_.end());
  const std::size_t d = devices.size();
  table_.assign(d * d, Path{});
  const SmiClassifier classify(topo);
  std::vector<int> prev_node, prev_link, hops;
  std::vector<double> bw;
  for (std::size_t x = 0; x < d; ++x) {
    detail::route_from(topo, all, adj, devices[x], prev_node, prev_link, hops, bw);
    for (std::size_t y = 0; y < d; ++y) {
      Path& path = table_[x * d + y];
      path.token = classify(devices[x], devices[y]);
      if (x == y) {
        path.type = PathType::loc;
        path.bw_GBps = kLocalGBps;
        path.route = {devices[x]};
        continue;
      }
      if (hops[devices[y]] < 0) continue;  // unreachable: DIS
      // Filled back to front at their final size: on thousands of GPUs these are most of the cost.
      const std::size_t length = static_cast<std::size_t>(hops[devices[y]]);
      std::vector<int> route(length + 1), route_links(length);
      route[0] = devices[x];
      std::size_t k = length;
      for (int v = devices[y]; v != devices[x]; v = prev_node[v], --k) {
        route[k] = v;
        route_links[k - 1] = prev_link[v];
      }
      path.bw_GBps = bw[devices[y]];
      for (int l : route_links) path.latency_us += all[l].latency_us;
      path.type = detail::classify_route(topo, all, route, route_links);
      path.route = std::move(route);
      path.links = std::move(route_links);
    }
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
