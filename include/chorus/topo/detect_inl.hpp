// detect.hpp's bodies: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by detect.hpp; not for direct use.
#pragma once

#include <string>
#include <vector>

#include "../core/config.hpp"
#include "detect.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

CHORUS_FUNC Topology detect(const DetectOptions& options, std::vector<std::string>* notes) {
  Topology topo = read_sysfs(options.sysfs_root);
  const NvmlInfo nvml = read_nvml(options.nvml_library.c_str());
  if (nvml.available) {
    apply_nvml(topo, nvml);
    topo.source += " + NVML";
    if (notes != nullptr && static_cast<int>(nvml.gpus.size()) != topo.gpu_count()) {
      notes->push_back("NVML sees " + std::to_string(nvml.gpus.size()) + " GPUs, sysfs " +
                       std::to_string(topo.gpu_count()));
    }
  } else if (notes != nullptr) {
    notes->push_back("NVML not available: " + nvml.reason + "; NVLinks unknown");
  }
  int sm = 0;
  for (int gpu : topo.nodes_of(NodeKind::gpu)) {
    const int s = topo.nodes[gpu].sm;
    if (s > 0 && (sm == 0 || s < sm)) sm = s;
  }
  topo.default_pcie_generation = typical_pcie_generation(sm);
  validate(topo, "detect");
  return topo;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
