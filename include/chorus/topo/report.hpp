// Text for people: device names, the GPU/NIC matrix in nvidia-smi's own layout (which read_nvsmi
// reads back), and one-line ring descriptions.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cpuset.hpp"
#include "path.hpp"
#include "path_class.hpp"
#include "ring_search.hpp"
#include "topology.hpp"

namespace chorus::topo {

// "GPU0".."GPUn-1", then each NIC's RDMA name ("mlx5_0"). A NIC whose name is missing, taken by
// an earlier NIC, or unfit for a matrix heading (spaces, a token) is "NIC<k>", as nvidia-smi
// labels NICs, so the names are always distinct single words.
inline std::vector<std::string> device_names(const Topology& topo, const PathMatrix& paths) {
  std::vector<std::string> names;
  for (int g = 0; g < paths.gpu_count(); ++g) names.push_back("GPU" + std::to_string(g));
  const auto taken = [&names](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (int k = 0; k < paths.nic_count(); ++k) {
    std::string name = topo.nodes[paths.nic_node(k)].name;
    if (!is_nic_name(name) || taken(name)) name = "NIC" + std::to_string(k);
    while (taken(name)) name += "_";
    names.push_back(name);
  }
  return names;
}

inline std::string format_GBps(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// The matrix as `nvidia-smi topo -m` prints it: tab-separated, " X " on the diagonal, CPU and NUMA
// Affinity columns on GPU rows.
inline std::string smi_matrix(const Topology& topo, const PathMatrix& paths) {
  const std::vector<std::string> names = device_names(topo, paths);
  const int d = paths.device_count();
  std::string out;
  for (int c = 0; c < d; ++c) out += "\t" + names[c];
  out += "\tCPU Affinity\tNUMA Affinity\n";
  for (int r = 0; r < d; ++r) {
    out += names[r];
    for (int c = 0; c < d; ++c) out += r == c ? "\t X " : "\t" + paths.device(r, c).token.text();
    if (r < paths.gpu_count()) {
      const int cpu = topo.cpu_of(paths.gpu_node(r));
      std::string cpus = "N/A";
      std::string numa = "N/A";
      if (cpu >= 0) {
        const auto mask = parse_cpumask(topo.nodes[cpu].cpu.affinity);
        if (mask && std::find(mask->begin(), mask->end(), true) != mask->end()) cpus = to_cpulist(*mask);
        numa = std::to_string(topo.nodes[cpu].cpu.numa);
      }
      out += "\t" + cpus + "\t" + numa;
    }
    out += "\n";
  }
  return out;
}

// "0 -> 3 -> 2 -> 1 -> 0" for a ring order.
inline std::string ring_text(const std::vector<int>& order) {
  std::string out;
  for (int g : order) out += std::to_string(g) + " -> ";
  out += order.empty() ? "(no GPUs)" : std::to_string(order.front());
  return out;
}

}  // namespace chorus::topo
