// nvsmi_reader.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by nvsmi_reader.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "../core/log.hpp"
#include "nvsmi_reader.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

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

namespace detail {

// Reports a doubt about the input: a line number (0: none) and what.
using NvsmiWarn = std::function<void(int, const std::string&)>;

// The PCIe level of cell (a, b), 1 (PIX) to 5 (SYS); 0 where unknown (NVLink hides it, or no row gave it).
CHORUS_FUNC int known_level(const NvsmiMatrix& m, int a, int b) {
  const auto& c = m.cells[a][b];
  return c ? pcie_level(c->cls) : 0;
}

// NVLink: direct bonds, or an NVSwitch fabric when a GPU has more links than any GPU can.
struct NvlinkSummary {
  std::vector<int> links_per_gpu, widest;  // per GPU: all its links, its widest bond
  bool switched = false;                   // more links on one GPU than a GPU has: an NVSwitch
  int max_links = 0;                       // the most links one GPU uses (to one peer when switched)
};
CHORUS_FUNC NvlinkSummary summarise_nvlinks(const NvsmiMatrix& m) {
  const int g = m.gpus;
  NvlinkSummary s;
  s.links_per_gpu.assign(g, 0);
  s.widest.assign(g, 0);
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      const auto& c = m.cells[a][b];
      if (a != b && c && c->cls == SmiClass::nvlink) {
        s.links_per_gpu[a] += c->nvlinks;
        s.widest[a] = std::max(s.widest[a], c->nvlinks);
      }
    }
  }
  s.switched = std::any_of(s.links_per_gpu.begin(), s.links_per_gpu.end(), [](int n) { return n > kMaxNvlinksPerGpu; });
  for (int a = 0; a < g; ++a) s.max_links = std::max(s.max_links, s.switched ? s.widest[a] : s.links_per_gpu[a]);
  return s;
}

// What the affinity columns say about each device's NUMA node ("" where nothing: NICs, N/A).
CHORUS_FUNC std::vector<std::string> affinity_keys(const NvsmiMatrix& m) {
  std::vector<std::string> key(m.devices());
  for (int a = 0; a < m.gpus; ++a) {
    const std::string& list = m.has_numa_affinity ? m.numa_affinity_list[a] : m.cpu_affinity[a];
    const auto set = parse_cpulist(list);  // normalised, so 0,5-11 and 0,5,6-11 agree
    if (!list.empty() && set) key[a] = (m.has_numa_affinity ? "NUMA Affinity " : "CPU Affinity ") + to_cpulist(*set);
  }
  return key;
}

// The matrix's groups first (PIX to PHB entries join): differing affinity inside one is overruled.
CHORUS_FUNC void warn_overruled_affinity(const NvsmiMatrix& m, UnionFind& numa, const std::vector<std::string>& key,
                                         const std::vector<int>& all, const NvsmiWarn& warn) {
  for (const auto& group : groups_of(numa, all)) {
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
}

// Then the affinity joins what the matrix leaves open: groups with no SYS entry between them. GPUs of one
// affinity that SYS keeps apart stay apart, with a warning.
CHORUS_FUNC void join_by_affinity(const NvsmiMatrix& m, UnionFind& numa, const std::vector<std::string>& key,
                                  const NvsmiWarn& warn) {
  const int d = m.devices(), g = m.gpus;
  std::vector<std::vector<char>> apart(d, std::vector<char>(d, 0));  // by group representative
  for (int a = 0; a < d; ++a) {
    for (int b = 0; b < d; ++b) {
      if (known_level(m, a, b) == 5) apart[numa.find(a)][numa.find(b)] = 1;
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

// Last, merge groups that nothing keeps apart (only NVLink entries between them, no differing affinity).
CHORUS_FUNC void merge_unseparated(const NvsmiMatrix& m, UnionFind& numa, const std::vector<std::string>& key,
                                   const std::vector<int>& all) {
  const auto group_key = [&key](const std::vector<int>& group) {
    std::string found;
    for (int member : group) {
      if (!key[member].empty()) found = key[member];
    }
    return found;
  };
  std::vector<std::vector<int>> kept;
  for (auto& group : groups_of(numa, all)) {
    bool merged = false;
    for (auto& into : kept) {
      const std::string ka = group_key(group), kb = group_key(into);
      if (!ka.empty() && !kb.empty() && ka != kb) continue;
      bool apart = false;
      for (int x : group) {
        for (int y : into) apart = apart || known_level(m, x, y) == 5;
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

// The NUMA node of every device: the matrix, then the affinity columns, then whatever nothing separates.
CHORUS_FUNC UnionFind numa_nodes(const NvsmiMatrix& m, const std::vector<int>& all, const NvsmiWarn& warn) {
  UnionFind numa(m.devices());
  for (int a = 0; a < m.devices(); ++a) {
    for (int b = a + 1; b < m.devices(); ++b) {
      const int level = known_level(m, a, b);
      if (level >= 1 && level <= 4) numa.join(a, b);
    }
  }
  const std::vector<std::string> key = affinity_keys(m);
  warn_overruled_affinity(m, numa, key, all, warn);
  join_by_affinity(m, numa, key, warn);
  merge_unseparated(m, numa, key, all);
  return numa;
}

// A number per NUMA group: the affinity column's where it gives one. Where the matrix split a NUMA node,
// the first part keeps its number and the others get free ones: NUMA numbers name CPUs, and NCCL's XML
// allows each once.
CHORUS_FUNC std::vector<int> numa_numbers(const NvsmiMatrix& m, const std::vector<std::vector<int>>& groups) {
  std::vector<int> ids;
  for (const auto& group : groups) {
    int id = -1;
    for (int member : group) {
      if (id < 0 && member < m.gpus && m.has_numa_affinity && m.numa_affinity[member] >= 0) id = m.numa_affinity[member];
    }
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) id = -1;
    ids.push_back(id);
  }
  for (int& id : ids) {
    if (id >= 0) continue;
    int next = 0;
    while (std::find(ids.begin(), ids.end(), next) != ids.end()) ++next;
    id = next;
  }
  return ids;
}

// The CPU of one NUMA group: the family's representative, its number, and the first CPU Affinity given.
CHORUS_FUNC CpuInfo numa_cpu(const NvsmiMatrix& m, const std::vector<int>& group, CpuFamily family, int numa) {
  CpuInfo cpu = representative_cpu(family);
  cpu.numa = numa;
  for (int member : group) {
    if (member >= m.gpus || m.cpu_affinity[member].empty()) continue;
    const auto cpus = parse_cpulist(m.cpu_affinity[member]);
    if (!cpus) {
      throw nvsmi_error(m.row_line[member], "CPU Affinity '" + excerpt(m.cpu_affinity[member]) +
                                                "' is not a CPU list like 0-19,40-59");
    }
    cpu.affinity = to_cpumask(*cpus);
    break;
  }
  return cpu;
}

// The PCI tree under each CPU: host bridges (PXB groups), switches (PHB/PXB/PIX groups), GPUs and NICs;
// returns each device's node.
CHORUS_FUNC std::vector<int> build_pci_tree(const NvsmiMatrix& m, Topology& topo, UnionFind& numa,
                                            const std::vector<int>& all, int sm, double gts, CpuFamily family) {
  const int d = m.devices(), g = m.gpus;
  UnionFind bridge(d), top(d), leaf(d);
  for (int a = 0; a < d; ++a) {
    for (int b = a + 1; b < d; ++b) {
      const int level = known_level(m, a, b);
      if (level >= 1 && level <= 3) bridge.join(a, b);
      if (level >= 1 && level <= 2) top.join(a, b);
      if (level == 1) leaf.join(a, b);
    }
  }
  const auto pci = [gts](const char* class_code, const char* vendor) {
    PciInfo info;
    info.class_code = class_code;
    info.vendor = vendor;
    info.link_gts = gts;
    info.link_width = 16;
    return info;
  };
  std::vector<int> node_of(d, -1);
  const auto place = [&](int device, int parent, int host_bridge) {
    if (device < g) {
      node_of[device] = topo.add_gpu(parent, pci("0x030200", "0x10de"), device, sm, host_bridge);
    } else {
      NetPort net;
      net.name = m.names[device];
      net.dev = device - g;
      net.gdr = true;
      node_of[device] = topo.add_nic(parent, pci("0x020700", "0x15b3"), {net}, host_bridge);
    }
  };
  const auto numa_groups = groups_of(numa, all);
  const std::vector<int> numa_ids = numa_numbers(m, numa_groups);
  for (std::size_t n = 0; n < numa_groups.size(); ++n) {
    const int cpu_node = topo.add_cpu(numa_cpu(m, numa_groups[n], family, numa_ids[n]));
    const auto bridges = groups_of(bridge, numa_groups[n]);
    for (std::size_t hb = 0; hb < bridges.size(); ++hb) {
      for (const auto& pxb : groups_of(top, bridges[hb])) {
        // Several PIX groups under one top switch each need their own switch below it (even a
        // single device): two devices hanging straight off the top switch would be PIX apart.
        const auto pix_groups = groups_of(leaf, pxb);
        int parent = cpu_node;
        if (pix_groups.size() > 1) parent = topo.add_pci_switch(cpu_node, pci("0x060400", ""), static_cast<int>(hb));
        for (const auto& pix : pix_groups) {
          int below = parent;
          if (pix.size() > 1 || pix_groups.size() > 1) {
            below = topo.add_pci_switch(parent, pci("0x060400", ""), static_cast<int>(hb));
          }
          for (int device : pix) place(device, below, static_cast<int>(hb));
        }
      }
    }
  }
  return node_of;
}

CHORUS_FUNC void add_nvlinks(const NvsmiMatrix& m, const NvlinkSummary& links, Topology& topo,
                             const std::vector<int>& node_of) {
  if (links.switched) {
    const int sw = topo.add_nvswitch("");
    for (int a = 0; a < m.gpus; ++a) {
      if (links.widest[a] > 0) topo.add_nvlink(node_of[a], sw, links.widest[a]);
    }
    return;
  }
  for (int a = 0; a < m.gpus; ++a) {
    for (int b = a + 1; b < m.gpus; ++b) {
      const auto& c = m.cells[a][b];
      if (c && c->cls == SmiClass::nvlink) topo.add_nvlink(node_of[a], node_of[b], c->nvlinks);
    }
  }
}

// Bus ids in tree order, so they read like a real machine's (GPUs in increasing order).
CHORUS_FUNC void assign_bus_ids(Topology& topo) {
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
      topo.nodes[node].pci.busid = synthetic_busid(bus++);
      stack.insert(stack.end(), children[node].rbegin(), children[node].rend());
    }
  }
  for (int sw : topo.nodes_of(NodeKind::nvswitch)) topo.nodes[sw].pci.busid = synthetic_busid(bus++);
}

// The derived machine must print the matrix it came from.
CHORUS_FUNC void check_prints_matrix(const NvsmiMatrix& m, const Topology& topo, const std::vector<int>& node_of) {
  const SmiClassifier classify(topo);
  for (int a = 0; a < m.devices(); ++a) {
    for (int b = 0; b < m.devices(); ++b) {
      const auto& c = m.cells[a][b];
      if (!c || a == b) continue;
      const SmiToken derived = classify(node_of[a], node_of[b]);
      if (derived != *c) {
        const int row = m.row_line[a] != 0 ? a : b;
        throw nvsmi_error(m.row_line[row], "row " + m.labels[row] + ", column " + m.labels[row == a ? b : a] + " says " +
                                               c->text() + ", which contradicts the rest of the matrix (it implies " +
                                               derived.text() + ")");
      }
    }
  }
}

}  // namespace detail

CHORUS_FUNC Topology topology_from_matrix(const NvsmiMatrix& m, const NvsmiOptions& options,
                                          std::vector<std::string>* warnings) {
  const detail::NvsmiWarn warn = [warnings](int line, const std::string& what) {
    std::string text = line > 0 ? chorus::detail::concat("line ", line, ": ", what) : what;
    if (warnings != nullptr) {
      warnings->push_back(std::move(text));
    } else {
      chorus::log(LogLevel::warn, "chorus::topo::read_nvsmi: ", text);
    }
  };
  const detail::NvlinkSummary links = detail::summarise_nvlinks(m);
  const int sm = options.sm > 0 ? options.sm : infer_sm(links.max_links);
  const int generation = options.pcie_generation > 0 ? options.pcie_generation : typical_pcie_generation(sm);
  const CpuFamily family = options.cpu != CpuFamily::unknown ? options.cpu : typical_cpu_family(sm);
  const double gts = pcie_gen_gts(generation);
  if (gts == 0) throw detail::nvsmi_error(0, chorus::detail::concat("PCIe generation ", generation, " does not exist"));

  std::vector<int> all(m.devices());
  std::iota(all.begin(), all.end(), 0);
  detail::UnionFind numa = detail::numa_nodes(m, all, warn);
  Topology topo;
  topo.default_pcie_generation = generation;
  const std::vector<int> node_of = detail::build_pci_tree(m, topo, numa, all, sm, gts, family);
  detail::add_nvlinks(m, links, topo, node_of);
  detail::assign_bus_ids(topo);
  validate(topo, "read_nvsmi");
  detail::check_prints_matrix(m, topo, node_of);
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

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
