// report.hpp's bodies: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by report.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "report.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

CHORUS_FUNC std::vector<std::string> device_names(const Topology& topo, const PathMatrix& paths) {
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

CHORUS_FUNC std::string format_GBps(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

CHORUS_FUNC std::string smi_matrix(const Topology& topo, const PathMatrix& paths) {
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

CHORUS_FUNC std::string ring_text(const std::vector<int>& order) {
  std::string out;
  for (int g : order) out += std::to_string(g) + " -> ";
  out += order.empty() ? "(no GPUs)" : std::to_string(order.front());
  return out;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
