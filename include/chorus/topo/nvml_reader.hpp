// NVLink wiring and GPU generations from NVML, loaded at run time with dlopen so that chorus
// needs neither the NVML headers nor the library to build, and runs where the driver is absent.
// The few functions used are declared here with the C signatures NVML documents (nvml.h):
// init/shutdown, device count and handles, PCI info (v3), CUDA compute capability, and per link
// its state and remote PCI info (v2). When the library, a symbol or the driver is missing,
// read_nvml() returns `available == false` with the reason; that is not an error.
//
// As in NCCL, links are aggregated per remote end; a remote end that is not one of the GPUs is
// taken for an NVSwitch (NCCL does the same when a VM hides the switch, nccl#1182).
#pragma once

#include <string>
#include <vector>

#include "../core/config.hpp"
#include "busid.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct NvmlLink {
  std::string remote_busid;
  int count = 0;
};

struct NvmlGpu {
  int index = 0;
  std::string busid;
  std::string name;
  int sm = 0;
  std::vector<NvmlLink> links;  // active NVLinks, aggregated by remote end
};

struct NvmlInfo {
  bool available = false;
  std::string reason;  // why not, when unavailable
  std::vector<NvmlGpu> gpus;
};

CHORUS_FUNC NvmlInfo read_nvml(const char* library_name = "libnvidia-ml.so.1");

// Adds what NVML knows to a topology read from sysfs: each GPU's generation (matched by bus id)
// and its NVLinks. GPU pairs are listed from both ends and bond once; every remote end that is not
// a GPU of the topology joins one NVSwitch node.
CHORUS_FUNC void apply_nvml(Topology& topo, const NvmlInfo& info);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "nvml_reader_inl.hpp"
#endif
