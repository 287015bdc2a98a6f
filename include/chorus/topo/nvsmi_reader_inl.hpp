// nvsmi_reader.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by nvsmi_reader.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "../core/log.hpp"
#include "nvsmi_reader.hpp"

namespace chorus::topo {

namespace detail {
struct UnionFind {
  std::vector<int> up;
  explicit UnionFind(int n) : up(static_cast<std::size_t>(n)) { std::iota(up.begin(), up.end(), 0); }
  int find(int x) {
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
  }
  // The smaller index stays the representative, so groups are named by their first member.
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) up[std::max(a, b)] = std::min(a, b);
  }
};

// Groups of `members` (sorted, each group sorted) under the equivalence of `uf`.
CHORUS_FUNC std::vector<std::vector<int>> groups_of(UnionFind& uf, const std::vector<int>& members) {
  std::map<int, std::vector<int>> by_root;
  std::vector<int> order;
  for (int m : members) {
    const int root = uf.find(m);
    if (by_root.find(root) == by_root.end()) order.push_back(root);
    by_root[root].push_back(m);
  }
  std::vector<std::vector<int>> out;
  for (int root : order) out.push_back(by_root[root]);
  return out;
}

CHORUS_FUNC std::string synthetic_busid(int number) {
  char text[16];
  std::snprintf(text, sizeof text, "%04x:%02x:00.0", (number >> 8) & 0xffff, number & 0xff);
  return text;
}
}  // namespace detail

CHORUS_FUNC Topology topology_from_matrix(const NvsmiMatrix& m, const NvsmiOptions& options,
                                          std::vector<std::string>* warnings) {
  const int d = m.devices();
  const int g = m.gpus;
  const auto warn = [warnings](int line, const std::string& what) {
    std::string text = line > 0 ? chorus::detail::concat("line ", line, ": ", what) : what;
    if (warnings != nullptr) {
      warnings->push_back(std::move(text));
    } else {
      chorus::log(LogLevel::warn, "chorus::topo::read_nvsmi: ", text);
    }
  };
  const auto cell = [&m](int a, int b) -> const std::optional<SmiToken>& { return m.cells[a][b]; };
  const auto known_level = [&](int a, int b) {
    const auto& c = cell(a, b);
    return c ? pcie_level(c->cls) : 0;  // 0: unknown (NVLink hides it, or no row gave it)
  };

  // NVLink: direct bonds, or an NVSwitch fabric when a GPU has more links than any GPU can.
  std::vector<int> links_per_gpu(g, 0), widest(g, 0);
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      const auto& c = cell(a, b);
      if (a != b && c && c->cls == SmiClass::nvlink) {
        links_per_gpu[a] += c->nvlinks;
        widest[a] = std::max(widest[a], c->nvlinks);
      }
    }
  }
  const bool switched =
      std::any_of(links_per_gpu.begin(), links_per_gpu.end(), [](int n) { return n > kMaxNvlinksPerGpu; });
  int max_links = 0;
  for (int a = 0; a < g; ++a) max_links = std::max(max_links, switched ? widest[a] : links_per_gpu[a]);
  const int sm = options.sm > 0 ? options.sm : infer_sm(max_links);
  const int generation = options.pcie_generation > 0 ? options.pcie_generation : typical_pcie_generation(sm);
  const CpuFamily family = options.cpu != CpuFamily::unknown ? options.cpu : typical_cpu_family(sm);
  const double gts = pcie_gen_gts(generation);
  if (gts == 0) throw detail::nvsmi_error(0, chorus::detail::concat("PCIe generation ", generation, " does not exist"));

  // NUMA nodes.
  detail::UnionFind numa(d);
  for (int a = 0; a < d; ++a) {
    for (int b = a + 1; b < d; ++b) {
      const int level = known_level(a, b);
      if (level >= 1 && level <= 4) numa.join(a, b);
    }
  }
  std::vector<std::string> key(d);  // what the affinity columns say about each device's NUMA node
  for (int a = 0; a < g; ++a) {
    const std::string& list = m.has_numa_affinity ? m.numa_affinity_list[a] : m.cpu_affinity[a];
    const auto set = parse_cpulist(list);  // normalised, so 0,5-11 and 0,5,6-11 agree
    if (!list.empty() && set) key[a] = (m.has_numa_affinity ? "NUMA Affinity " : "CPU Affinity ") + to_cpulist(*set);
  }
  std::vector<int> all(d);
  std::iota(all.begin(), all.end(), 0);
  // The matrix's groups first: differing affinity inside one is overruled.
  for (const auto& group : detail::groups_of(numa, all)) {
    for (int x : group) {
      const auto other = std::find_if(group.begin(), group.end(), [&](int y) {
        return !key[x].empty() && !key[y].empty() && key[x] != key[y];
      });
      if (other == group.end()) continue;
      warn(m.row_line[*other], m.labels[x] + " and " + m.labels[*other] +
                                   " are on one NUMA node by the matrix, but their affinity columns differ (" + key[x] +
                                   " vs " + key[*other] + "); following the matrix");
      break;
    }
  }
  // Then the affinity joins what the matrix leaves open: groups with no SYS entry between them.
  {
    std::vector<std::vector<char>> apart(d, std::vector<char>(d, 0));  // by group representative
    for (int a = 0; a < d; ++a) {
      for (int b = 0; b < d; ++b) {
        if (known_level(a, b) == 5) apart[numa.find(a)][numa.find(b)] = 1;
      }
    }
    for (int a = 0; a < g; ++a) {
      for (int b = a + 1; b < g; ++b) {
        const int ra = numa.find(a), rb = numa.find(b);
        if (key[a].empty() || key[a] != key[b] || ra == rb || apart[ra][rb]) continue;
        numa.join(a, b);
        const int r = numa.find(a);
        for (int x = 0; x < d; ++x) {
          apart[r][x] = apart[x][r] = static_cast<char>(apart[ra][x] || apart[rb][x]);
        }
      }
    }
    std::vector<int> warned;
    for (int a = 0; a < g; ++a) {
      if (key[a].empty() || std::find(warned.begin(), warned.end(), a) != warned.end()) continue;
      std::vector<int> same, roots;
      for (int b = a; b < g; ++b) {
        if (key[b] != key[a]) continue;
        same.push_back(b);
        if (std::find(roots.begin(), roots.end(), numa.find(b)) == roots.end()) roots.push_back(numa.find(b));
      }
      warned.insert(warned.end(), same.begin(), same.end());
      if (roots.size() < 2) continue;
      std::string names;
      int line = 0;
      for (int b : same) {
        names += (names.empty() ? "" : ", ") + m.labels[b];
        if (line == 0 && numa.find(b) != numa.find(a)) line = m.row_line[b];
      }
      warn(line, chorus::detail::concat(names, " have ", key[a], ", but the matrix puts them on ", roots.size(),
                                        " NUMA nodes (SYS between them); following the matrix"));
    }
  }
  // Merge groups that nothing keeps apart (only NVLink entries between them).
  const auto group_key = [&key](const std::vector<int>& group) {
    std::string found;
    for (int member : group) {
      if (!key[member].empty()) found = key[member];
    }
    return found;
  };
  {
    auto groups = detail::groups_of(numa, all);
    std::vector<std::vector<int>> kept;
    for (auto& group : groups) {
      bool merged = false;
      for (auto& into : kept) {
        const std::string ka = group_key(group), kb = group_key(into);
        if (!ka.empty() && !kb.empty() && ka != kb) continue;
        bool apart = false;
        for (int x : group) {
          for (int y : into) apart = apart || known_level(x, y) == 5;
        }
        if (apart) continue;
        numa.join(group.front(), into.front());
        into.insert(into.end(), group.begin(), group.end());
        merged = true;
        break;
      }
      if (!merged) kept.push_back(group);
    }
  }
  detail::UnionFind bridge(d), top(d), leaf(d);
  for (int a = 0; a < d; ++a) {
    for (int b = a + 1; b < d; ++b) {
      const int level = known_level(a, b);
      if (level >= 1 && level <= 3) bridge.join(a, b);
      if (level >= 1 && level <= 2) top.join(a, b);
      if (level == 1) leaf.join(a, b);
    }
  }

  Topology topo;
  topo.default_pcie_generation = generation;
  std::vector<int> node_of(d, -1);
  const auto numa_groups = detail::groups_of(numa, all);
  std::vector<int> numa_ids;
  for (const auto& group : numa_groups) {
    int id = -1;
    for (int member : group) {
      if (id < 0 && member < g && m.has_numa_affinity && m.numa_affinity[member] >= 0) id = m.numa_affinity[member];
    }
    // Where the matrix split a NUMA node, the first part keeps its number and the others get
    // free ones: NUMA numbers name CPUs, and NCCL's XML allows each once.
    if (std::find(numa_ids.begin(), numa_ids.end(), id) != numa_ids.end()) id = -1;
    numa_ids.push_back(id);
  }
  for (int& id : numa_ids) {
    if (id >= 0) continue;
    int next = 0;
    while (std::find(numa_ids.begin(), numa_ids.end(), next) != numa_ids.end()) ++next;
    id = next;
  }
  const auto pci_for = [&](int device) {
    PciInfo pci;
    pci.link_gts = gts;
    pci.link_width = 16;
    if (device < g) {
      pci.class_code = "0x030200";
      pci.vendor = "0x10de";
    } else {
      pci.class_code = "0x020700";
      pci.vendor = "0x15b3";
    }
    return pci;
  };
  const auto bridge_pci = [&] {
    PciInfo pci;
    pci.class_code = "0x060400";
    pci.link_gts = gts;
    pci.link_width = 16;
    return pci;
  };
  const auto place = [&](int device, int parent, int host_bridge) {
    if (device < g) {
      node_of[device] = topo.add_gpu(parent, pci_for(device), device, sm, host_bridge);
    } else {
      NetPort net;
      net.name = m.names[device];
      net.dev = device - g;
      net.gdr = true;
      node_of[device] = topo.add_nic(parent, pci_for(device), {net}, host_bridge);
    }
  };
  for (std::size_t n = 0; n < numa_groups.size(); ++n) {
    const auto& group = numa_groups[n];
    CpuInfo cpu = representative_cpu(family);
    cpu.numa = numa_ids[n];
    for (int member : group) {
      if (member >= g || m.cpu_affinity[member].empty()) continue;
      const auto cpus = parse_cpulist(m.cpu_affinity[member]);
      if (!cpus) {
        throw detail::nvsmi_error(m.row_line[member], "CPU Affinity '" + detail::excerpt(m.cpu_affinity[member]) +
                                                          "' is not a CPU list like 0-19,40-59");
      }
      cpu.affinity = to_cpumask(*cpus);
      break;
    }
    const int cpu_node = topo.add_cpu(cpu);
    const auto bridges = detail::groups_of(bridge, group);
    for (std::size_t hb = 0; hb < bridges.size(); ++hb) {
      for (const auto& pxb : detail::groups_of(top, bridges[hb])) {
        // Several PIX groups under one top switch each need their own switch below it (even a
        // single device): two devices hanging straight off the top switch would be PIX apart.
        const auto pix_groups = detail::groups_of(leaf, pxb);
        int parent = cpu_node;
        if (pix_groups.size() > 1) parent = topo.add_pci_switch(cpu_node, bridge_pci(), static_cast<int>(hb));
        for (const auto& pix : pix_groups) {
          int below = parent;
          if (pix.size() > 1 || pix_groups.size() > 1) {
            below = topo.add_pci_switch(parent, bridge_pci(), static_cast<int>(hb));
          }
          for (int device : pix) place(device, below, static_cast<int>(hb));
        }
      }
    }
  }
  if (switched) {
    const int sw = topo.add_nvswitch("");
    for (int a = 0; a < g; ++a) {
      if (widest[a] > 0) topo.add_nvlink(node_of[a], sw, widest[a]);
    }
  } else {
    for (int a = 0; a < g; ++a) {
      for (int b = a + 1; b < g; ++b) {
        const auto& c = cell(a, b);
        if (c && c->cls == SmiClass::nvlink) topo.add_nvlink(node_of[a], node_of[b], c->nvlinks);
      }
    }
  }
  // Bus ids in tree order, so they read like a real machine's (GPUs in increasing order).
  {
    int bus = 1;
    std::vector<std::vector<int>> children(topo.nodes.size());
    for (int i = 0; i < static_cast<int>(topo.nodes.size()); ++i) {
      if (topo.nodes[i].parent >= 0) children[topo.nodes[i].parent].push_back(i);
    }
    std::vector<int> stack;
    for (int cpu : topo.cpu_nodes()) {
      stack.assign(children[cpu].rbegin(), children[cpu].rend());
      while (!stack.empty()) {
        const int node = stack.back();
        stack.pop_back();
        topo.nodes[node].pci.busid = detail::synthetic_busid(bus++);
        stack.insert(stack.end(), children[node].rbegin(), children[node].rend());
      }
    }
    for (int sw : topo.nodes_of(NodeKind::nvswitch)) topo.nodes[sw].pci.busid = detail::synthetic_busid(bus++);
  }
  validate(topo, "read_nvsmi");

  // The derived machine must print the matrix it came from.
  const SmiClassifier classify(topo);
  for (int a = 0; a < d; ++a) {
    for (int b = 0; b < d; ++b) {
      const auto& c = cell(a, b);
      if (!c || a == b) continue;
      const SmiToken derived = classify(node_of[a], node_of[b]);
      if (derived != *c) {
        const int row = m.row_line[a] != 0 ? a : b;
        throw detail::nvsmi_error(m.row_line[row], "row " + m.labels[row] + ", column " + m.labels[row == a ? b : a] +
                                                       " says " + c->text() +
                                                       ", which contradicts the rest of the matrix (it implies " +
                                                       derived.text() + ")");
      }
    }
  }
  return topo;
}

CHORUS_FUNC Topology read_nvsmi(std::string_view text, const NvsmiOptions& options,
                                std::vector<std::string>* warnings) {
  Topology topo = topology_from_matrix(parse_nvsmi(text), options, warnings);
  topo.source = "nvidia-smi topo -m";
  return topo;
}

CHORUS_FUNC Topology read_nvsmi_file(const std::string& path, const NvsmiOptions& options,
                                     std::vector<std::string>* warnings) {
  Topology topo = read_nvsmi(read_text_file(path, "read_nvsmi"), options, warnings);
  topo.source = "nvidia-smi topo -m (" + path + ")";
  return topo;
}

}  // namespace chorus::topo
