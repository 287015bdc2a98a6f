// Topology: one machine as a graph. Nodes are GPUs, NVSwitches, PCIe switches, CPUs (NUMA nodes)
// and NICs; the PCIe tree is stored as parent pointers, NVLinks as a list of bonded connections,
// and every typed Link (with its bandwidth and latency) is derived from those by links().
// Readers build a Topology and call validate(); paths, search and the XML writer only read it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "bandwidth.hpp"
#include "link.hpp"
#include "node.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
// Topology errors are not tied to a rank: "chorus::topo::<call>: <details>".
template <class... Parts>
Error topo_error(const char* call, const Parts&... parts) {
  return Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::topo::", call, ": ", parts...));
}
// A value quoted in an error message: at most `max` characters, control bytes shown as '?', so a
// megabyte of garbage does not become a megabyte of message.
CHORUS_FUNC std::string excerpt(std::string_view text, std::size_t max = 48);
}  // namespace detail

// NVLink bonding between two nodes (gpu-gpu, gpu-nvswitch, gpu-cpu); `count` links in total.
struct NvLinkBond {
  int a = -1;
  int b = -1;
  int count = 0;
};

struct Topology {
  std::vector<Node> nodes;
  std::vector<NvLinkBond> nvlinks;
  // Applied to PCIe links whose speed or width the source did not give.
  int default_pcie_generation = 3;
  int default_pcie_width = 16;
  std::string source;  // where it came from, for people: "nvidia-smi topo -m (dgx1.txt)"

  int add_cpu(CpuInfo info) {
    Node node;
    node.kind = NodeKind::cpu;
    node.cpu = std::move(info);
    return push(std::move(node));
  }
  int add_pci_switch(int parent, PciInfo pci, int host_bridge = 0) {
    return push(pci_node(NodeKind::pci_switch, parent, std::move(pci), host_bridge));
  }
  int add_gpu(int parent, PciInfo pci, int dev, int sm, int host_bridge = 0) {
    Node node = pci_node(NodeKind::gpu, parent, std::move(pci), host_bridge);
    node.dev = dev;
    node.sm = sm;
    node.rank = dev;
    return push(std::move(node));
  }
  int add_nic(int parent, PciInfo pci, std::vector<NetPort> nets, int host_bridge = 0) {
    Node node = pci_node(NodeKind::nic, parent, std::move(pci), host_bridge);
    if (!nets.empty()) node.name = nets.front().name;
    node.nets = std::move(nets);
    return push(std::move(node));
  }
  int add_nvswitch(std::string busid) {
    Node node;
    node.kind = NodeKind::nvswitch;
    node.pci.busid = std::move(busid);
    node.pci.class_code = "0x068000";
    return push(std::move(node));
  }
  // Adds `count` links between a and b, bonding them with links already there.
  void add_nvlink(int a, int b, int count) {
    if (a > b) std::swap(a, b);
    for (NvLinkBond& bond : nvlinks) {
      if (bond.a == a && bond.b == b) {
        bond.count += count;
        return;
      }
    }
    nvlinks.push_back(NvLinkBond{a, b, count});
  }

  bool has(NodeKind kind) const;
  std::vector<int> nodes_of(NodeKind kind) const {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      if (nodes[i].kind == kind) out.push_back(i);
    }
    return out;
  }
  // GPU node indices ordered by device index: gpu_nodes()[d] is GPU d.
  std::vector<int> gpu_nodes() const;
  // NIC node indices in network-device order: by their first port's device index (NCCL's net
  // dev, nvidia-smi's NIC number), then by bus id; NICs without ports come last.
  std::vector<int> nic_nodes() const;
  std::vector<int> cpu_nodes() const { return nodes_of(NodeKind::cpu); }
  int gpu_count() const { return static_cast<int>(nodes_of(NodeKind::gpu).size()); }

  // The CPU at the top of a node's PCIe tree, or -1 if it has none (NVSwitch, broken tree).
  int cpu_of(int node) const {
    for (std::size_t guard = 0; node >= 0 && guard <= nodes.size(); ++guard) {
      if (nodes[node].kind == NodeKind::cpu) return node;
      node = nodes[node].parent;
    }
    return -1;
  }
  int find_busid(const std::string& busid) const {
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      if (nodes[i].kind != NodeKind::cpu && nodes[i].pci.busid == busid) return i;
    }
    return -1;
  }

 private:
  static Node pci_node(NodeKind kind, int parent, PciInfo pci, int host_bridge) {
    Node node;
    node.kind = kind;
    node.parent = parent;
    node.pci = std::move(pci);
    node.host_bridge = host_bridge;
    return node;
  }
  int push(Node node) {
    nodes.push_back(std::move(node));
    return static_cast<int>(nodes.size()) - 1;
  }
};

// Checks what paths and search rely on, naming the first problem: GPU indices are exactly
// 0..n-1, every PCIe device sits in a tree under a CPU, NVLinks join existing nodes with a
// positive count, and no NVLink joins two non-GPU nodes.
CHORUS_FUNC void validate(const Topology& topo, const char* call);

// Every typed link with its bandwidth: one PCIe link per node with a parent, one link per NVLink
// bond, one socket link per pair of CPUs, one network link per NIC.
CHORUS_FUNC std::vector<Link> links(const Topology& topo);

// A canonical text form: CPUs by NUMA id, each PCIe subtree with children sorted by bus id, then
// NVLinks sorted. Two topologies are the same machine exactly when their descriptions are equal,
// whatever order a source listed things in. (The defaults for links of unknown speed are a
// reader's assumption, not part of the machine, and are left out.)
CHORUS_FUNC std::string describe(const Topology& topo);

CHORUS_FUNC bool same_machine(const Topology& a, const Topology& b);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "topology_inl.hpp"
#endif
