// The local machine: sysfs for the PCIe tree, NUMA nodes and NICs, then NVML (when the driver is
// there) for GPU generations and NVLinks. A machine without GPUs or without NVML is not an error:
// the topology then has no GPUs or no NVLinks, and `notes` says what was missing.
// (CUDA peer queries live in cuda_reader.hpp, which only CUDA builds can include.)
#pragma once

#include <string>
#include <vector>

#include "bandwidth.hpp"
#include "nvml_reader.hpp"
#include "sysfs_reader.hpp"
#include "topology.hpp"

namespace chorus::topo {

struct DetectOptions {
  std::string sysfs_root = "/";
  std::string nvml_library = "libnvidia-ml.so.1";
};

inline Topology detect(const DetectOptions& options, std::vector<std::string>* notes = nullptr) {
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

inline Topology detect() { return detect(DetectOptions{}); }

}  // namespace chorus::topo
