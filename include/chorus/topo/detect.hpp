// The local machine: sysfs for the PCIe tree, NUMA nodes and NICs, then NVML (when the driver is
// there) for GPU generations and NVLinks. A machine without GPUs or without NVML is not an error:
// the topology then has no GPUs or no NVLinks, and `notes` says what was missing.
// (CUDA peer queries live in cuda_reader.hpp, which only CUDA builds can include.)
#pragma once

#include <string>
#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"
#include "nvml_reader.hpp"
#include "sysfs_reader.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct DetectOptions {
  std::string sysfs_root = "/";
  std::string nvml_library = "libnvidia-ml.so.1";
};

CHORUS_FUNC Topology detect(const DetectOptions& options, std::vector<std::string>* notes = nullptr);

inline Topology detect() { return detect(DetectOptions{}); }

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "detect_inl.hpp"
#endif
