// Ring orders for a team of GPUs from the machine's topology: the machine cut down to the team's GPUs
// (GPU d of the cut is rank d, matched by PCI bus id, since CUDA's device numbers need not be NVML's),
// then topo::search_rings on it, whose channels become the team's channel rings. Plain C++ (no CUDA), so
// the CPU tests run it on synthetic topologies; cuda::Team calls it with topo::detect()'s machine.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../topo/busid.hpp"
#include "../topo/ring_search.hpp"
#include "../topo/topology.hpp"
#include "ring_orders.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

struct RingChoice {
  RingOrders orders;
  std::string source;  // for people: which search gave them, or why the identity ring stands in
};

// The machine with only the GPUs whose bus ids are listed (rank r's at busids[r]) renumbered so GPU r is
// rank r; NVLinks to GPUs left out go with them. Throws chorus::Error naming a bus id the machine lacks.
inline topo::Topology team_topology(const topo::Topology& machine, const std::vector<std::string>& busids) {
  const char* call = "cuda::team_topology";
  std::vector<int> rank_of_node(machine.nodes.size(), -1);
  for (std::size_t r = 0; r < busids.size(); ++r) {
    const std::optional<std::string> busid = topo::normalize_busid(busids[r]);
    const int node = busid ? machine.find_busid(*busid) : -1;
    if (node < 0 || machine.nodes[static_cast<std::size_t>(node)].kind != topo::NodeKind::gpu) {
      throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(r), "GPU ", busids[r], " is not in the topology");
    }
    if (rank_of_node[static_cast<std::size_t>(node)] >= 0) {
      throw make_error(ErrorCode::invalid_argument, call, static_cast<int>(r), "GPU ", busids[r], " is also rank ",
                       rank_of_node[static_cast<std::size_t>(node)], "'s");
    }
    rank_of_node[static_cast<std::size_t>(node)] = static_cast<int>(r);
  }
  topo::Topology team = machine;
  team.nodes.clear();
  team.nvlinks.clear();
  std::vector<int> renumbered(machine.nodes.size(), -1);
  for (std::size_t i = 0; i < machine.nodes.size(); ++i) {
    topo::Node node = machine.nodes[i];
    if (node.kind == topo::NodeKind::gpu) {
      if (rank_of_node[i] < 0) continue;
      node.dev = node.rank = rank_of_node[i];
    }
    renumbered[i] = static_cast<int>(team.nodes.size());
    team.nodes.push_back(std::move(node));
  }
  // Nothing hangs off a GPU in the PCIe tree (validate), so every kept parent is kept.
  for (topo::Node& node : team.nodes) {
    if (node.parent >= 0) node.parent = renumbered[static_cast<std::size_t>(node.parent)];
  }
  for (const topo::NvLinkBond& bond : machine.nvlinks) {
    const int a = renumbered[static_cast<std::size_t>(bond.a)];
    const int b = renumbered[static_cast<std::size_t>(bond.b)];
    if (a >= 0 && b >= 0) team.add_nvlink(a, b, bond.count);
  }
  topo::validate(team, call);
  return team;
}

// The distinct rings of a plan in plan order, at most kMaxRings: a plan's channels repeat rings (NVSwitch:
// one ring on every channel), and block b runs on ring b % rings, so the repeats add nothing.
inline RingOrders distinct_rings(const topo::RingPlan& plan) {
  RingOrders orders;
  for (const topo::Ring& ring : plan.rings) {
    if (orders.size() == static_cast<std::size_t>(kernel::kMaxRings)) break;
    bool repeat = false;
    for (const std::vector<int>& order : orders) repeat = repeat || order == ring.order;
    if (!repeat) orders.push_back(ring.order);
  }
  return orders;
}

// The team's rings from the machine's topology, or the identity ring with the reason it stands in (a GPU
// the topology does not know, no ring found): rings only choose which links carry the data, any ring
// gives correct results.
inline RingChoice ring_orders_for(const topo::Topology& machine, const std::vector<std::string>& busids) {
  const int n = static_cast<int>(busids.size());
  try {
    const topo::RingPlan plan = topo::search_rings(team_topology(machine, busids));
    RingOrders orders = distinct_rings(plan);
    if (orders.empty()) return {identity_ring_orders(n), "identity ring: the topology search found no ring"};
    check_ring_orders("cuda::ring_orders_for", orders, n);
    return {orders, detail::concat("topology: ", orders.size(), " distinct of ", plan.rings.size(), " channel rings")};
  } catch (const std::exception& e) {
    return {identity_ring_orders(n), detail::concat("identity ring: ", e.what())};
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
