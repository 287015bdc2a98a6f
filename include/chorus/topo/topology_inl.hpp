// topology.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by topology.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
CHORUS_FUNC std::string excerpt(std::string_view text, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  if (text.size() > max) out += chorus::detail::concat("... (", text.size(), " characters)");
  return out;
}
}  // namespace detail

CHORUS_FUNC bool Topology::has(NodeKind kind) const {
  return std::any_of(nodes.begin(), nodes.end(), [kind](const Node& n) { return n.kind == kind; });
}
CHORUS_FUNC std::vector<int> Topology::gpu_nodes() const {
  std::vector<int> out = nodes_of(NodeKind::gpu);
  std::stable_sort(out.begin(), out.end(), [this](int x, int y) { return nodes[x].dev < nodes[y].dev; });
  return out;
}
CHORUS_FUNC std::vector<int> Topology::nic_nodes() const {
  std::vector<int> out = nodes_of(NodeKind::nic);
  const auto key = [this](int n) {
    const Node& node = nodes[n];
    return std::make_tuple(node.nets.empty() ? 1 : 0, node.nets.empty() ? 0 : node.nets.front().dev,
                           node.pci.busid, n);
  };
  std::sort(out.begin(), out.end(), [&key](int x, int y) { return key(x) < key(y); });
  return out;
}

CHORUS_FUNC void validate(const Topology& topo, const char* call) {
  const int n = static_cast<int>(topo.nodes.size());
  for (int i = 0; i < n; ++i) {
    const Node& node = topo.nodes[i];
    if (node.kind == NodeKind::cpu || node.kind == NodeKind::nvswitch) {
      if (node.parent != -1) throw detail::topo_error(call, to_string(node.kind), " node ", i, " has a PCIe parent");
      continue;
    }
    if (node.parent < 0 || node.parent >= n) {
      throw detail::topo_error(call, to_string(node.kind), " ", node.pci.busid, " is not attached to any CPU");
    }
    const NodeKind up = topo.nodes[node.parent].kind;
    if (up != NodeKind::cpu && up != NodeKind::pci_switch) {
      throw detail::topo_error(call, to_string(node.kind), " ", node.pci.busid, " hangs off a ", to_string(up),
                               ", not a PCIe switch or CPU");
    }
    if (topo.cpu_of(i) < 0) throw detail::topo_error(call, "the PCIe tree above ", node.pci.busid, " has a cycle");
  }
  const std::vector<int> gpus = topo.gpu_nodes();
  for (int d = 0; d < static_cast<int>(gpus.size()); ++d) {
    if (topo.nodes[gpus[d]].dev != d) {
      throw detail::topo_error(call, "GPU indices must be 0..", gpus.size() - 1, " without gaps or repeats, found ",
                               topo.nodes[gpus[d]].dev, " where ", d, " was expected");
    }
  }
  for (const NvLinkBond& bond : topo.nvlinks) {
    if (bond.a < 0 || bond.b < 0 || bond.a >= n || bond.b >= n || bond.a == bond.b) {
      throw detail::topo_error(call, "an NVLink joins invalid nodes ", bond.a, " and ", bond.b);
    }
    if (bond.count <= 0) throw detail::topo_error(call, "an NVLink has link count ", bond.count);
    if (topo.nodes[bond.a].kind != NodeKind::gpu && topo.nodes[bond.b].kind != NodeKind::gpu) {
      throw detail::topo_error(call, "an NVLink joins a ", to_string(topo.nodes[bond.a].kind), " and a ",
                               to_string(topo.nodes[bond.b].kind), "; one end must be a GPU");
    }
  }
}

CHORUS_FUNC std::vector<Link> links(const Topology& topo) {
  std::vector<Link> out;
  const int n = static_cast<int>(topo.nodes.size());
  for (int i = 0; i < n; ++i) {
    const Node& node = topo.nodes[i];
    if (node.parent < 0) continue;
    Link link;
    link.kind = LinkKind::pcie;
    link.a = i;
    link.b = node.parent;
    link.gts = node.pci.link_gts > 0 ? node.pci.link_gts : pcie_gen_gts(topo.default_pcie_generation);
    link.width = node.pci.link_width > 0 ? node.pci.link_width : topo.default_pcie_width;
    link.bw_GBps = pcie_GBps(link.gts, link.width);
    if (link.bw_GBps <= 0) link.bw_GBps = pcie_GBps(pcie_gen_gts(topo.default_pcie_generation), link.width);
    link.latency_us = kPcieLatencyUs;
    out.push_back(link);
  }
  for (const NvLinkBond& bond : topo.nvlinks) {
    Link link;
    link.kind = LinkKind::nvlink;
    link.a = bond.a;
    link.b = bond.b;
    link.count = bond.count;
    // The slower GPU end sets the per-link rate (a pair of different generations runs at the older one's).
    int sm = 0;
    for (int end : {bond.a, bond.b}) {
      const Node& node = topo.nodes[end];
      if (node.kind == NodeKind::gpu && node.sm > 0 && (sm == 0 || node.sm < sm)) sm = node.sm;
    }
    link.sm = sm;
    link.bw_GBps = bond.count * nvlink_link_GBps(sm);
    link.latency_us = kNvlinkLatencyUs;
    out.push_back(link);
  }
  const std::vector<int> cpus = topo.cpu_nodes();
  for (std::size_t x = 0; x < cpus.size(); ++x) {
    for (std::size_t y = x + 1; y < cpus.size(); ++y) {
      const CpuInfo& a = topo.nodes[cpus[x]].cpu;
      const CpuInfo& b = topo.nodes[cpus[y]].cpu;
      Link link;
      link.kind = LinkKind::inter_cpu;
      link.a = cpus[x];
      link.b = cpus[y];
      link.bw_GBps = std::min(inter_cpu_GBps(a.family(), a.model_id), inter_cpu_GBps(b.family(), b.model_id));
      link.latency_us = kInterCpuLatencyUs;
      out.push_back(link);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (topo.nodes[i].kind != NodeKind::nic) continue;
    Link link;
    link.kind = LinkKind::network;
    link.a = i;
    double mbps = 0;
    for (const NetPort& net : topo.nodes[i].nets) mbps += net.speed_mbps;
    link.bw_GBps = mbps > 0 ? mbps / 8000.0 : kDefaultNicGBps;
    link.latency_us = kNetworkLatencyUs;
    out.push_back(link);
  }
  return out;
}

namespace detail {
CHORUS_FUNC std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

CHORUS_FUNC void describe_subtree(const Topology& topo, const std::vector<std::vector<int>>& children,
                                  int node, int depth, std::string& out) {
  const Node& n = topo.nodes[node];
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  out += to_string(n.kind);
  if (n.kind == NodeKind::cpu) {
    out += chorus::detail::concat(" numa=", n.cpu.numa, " affinity=", n.cpu.affinity, " arch=", n.cpu.arch,
                                  " vendor=", n.cpu.vendor, " family=", n.cpu.family_id, " model=", n.cpu.model_id);
  } else {
    out += chorus::detail::concat(" ", n.pci.busid, " class=", n.pci.class_code, " vendor=", n.pci.vendor,
                                  " device=", n.pci.device, " subsys=", n.pci.subsystem_vendor, "/",
                                  n.pci.subsystem_device, " link=", format_number(n.pci.link_gts), "x",
                                  n.pci.link_width);
    if (topo.nodes[n.parent].kind == NodeKind::cpu) out += chorus::detail::concat(" host_bridge=", n.host_bridge);
  }
  if (n.kind == NodeKind::gpu) {
    out += chorus::detail::concat(" dev=", n.dev, " sm=", n.sm, " rank=", n.rank, " gdr=", n.gdr ? 1 : 0);
  }
  if (n.kind == NodeKind::nic) {
    out += " name=" + n.name;
    for (const NetPort& net : n.nets) {
      out += chorus::detail::concat(" [net ", net.name, " dev=", net.dev, " speed=", net.speed_mbps, " port=",
                                    net.port, " guid=", net.guid, " gdr=", net.gdr ? 1 : 0, "]");
    }
  }
  out += '\n';
  for (int child : children[node]) describe_subtree(topo, children, child, depth + 1, out);
}

CHORUS_FUNC std::string node_key(const Topology& topo, int node) {
  const Node& n = topo.nodes[node];
  if (n.kind == NodeKind::cpu) return chorus::detail::concat("cpu numa=", n.cpu.numa);
  return chorus::detail::concat(to_string(n.kind), " ", n.pci.busid);
}
}  // namespace detail

CHORUS_FUNC std::string describe(const Topology& topo) {
  const int n = static_cast<int>(topo.nodes.size());
  std::vector<std::vector<int>> children(topo.nodes.size());
  for (int i = 0; i < n; ++i) {
    const int parent = topo.nodes[i].parent;
    if (parent >= 0 && parent < n) children[parent].push_back(i);
  }
  for (auto& list : children) {
    std::sort(list.begin(), list.end(), [&topo](int x, int y) {
      return std::make_pair(topo.nodes[x].pci.busid, x) < std::make_pair(topo.nodes[y].pci.busid, y);
    });
  }
  std::vector<int> roots = topo.cpu_nodes();
  std::sort(roots.begin(), roots.end(),
            [&topo](int x, int y) { return topo.nodes[x].cpu.numa < topo.nodes[y].cpu.numa; });
  std::string out;
  for (int root : roots) detail::describe_subtree(topo, children, root, 0, out);
  std::vector<int> switches = topo.nodes_of(NodeKind::nvswitch);
  std::sort(switches.begin(), switches.end(),
            [&topo](int x, int y) { return topo.nodes[x].pci.busid < topo.nodes[y].pci.busid; });
  for (int sw : switches) out += "nvswitch " + topo.nodes[sw].pci.busid + "\n";
  std::vector<std::string> bonds;
  for (const NvLinkBond& bond : topo.nvlinks) {
    std::string a = detail::node_key(topo, bond.a);
    std::string b = detail::node_key(topo, bond.b);
    if (b < a) std::swap(a, b);
    bonds.push_back(chorus::detail::concat("nvlink ", a, " <-> ", b, " x", bond.count, "\n"));
  }
  std::sort(bonds.begin(), bonds.end());
  for (const std::string& line : bonds) out += line;
  return out;
}

CHORUS_FUNC bool same_machine(const Topology& a, const Topology& b) { return describe(a) == describe(b); }

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
