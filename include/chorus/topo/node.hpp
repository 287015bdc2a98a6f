// The vertices of a machine's topology graph: GPUs, NVSwitches, PCIe switches, CPUs (one per NUMA
// node) and NICs. One struct for all kinds keeps the graph a plain vector that readers, the XML
// writer and the tests can walk without casts; fields a kind does not use stay at their defaults.
#pragma once

#include <string>
#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

enum class NodeKind { gpu, nvswitch, pci_switch, cpu, nic };

inline const char* to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::gpu: return "gpu";
    case NodeKind::nvswitch: return "nvswitch";
    case NodeKind::pci_switch: return "pci";
    case NodeKind::cpu: return "cpu";
    case NodeKind::nic: return "nic";
  }
  return "?";
}

// What a PCI function says about itself (as sysfs and NCCL's XML spell it). Strings, not numbers,
// so a file read and written again is byte-for-byte the same where it matters.
struct PciInfo {
  std::string busid;        // "0000:07:00.0", lower case; synthesised when a source has none
  std::string class_code;   // "0x030200" GPU (3D controller), "0x060400" bridge, "0x020700" InfiniBand
  std::string vendor;       // "0x10de"; empty when unknown
  std::string device;
  std::string subsystem_vendor;
  std::string subsystem_device;
  double link_gts = 0.0;    // upstream link speed in GT/s; 0 = unknown (the Topology's default applies)
  int link_width = 0;       // upstream link width in lanes; 0 = unknown
};

struct CpuInfo {
  int numa = 0;             // NUMA node id
  std::string affinity;     // CPU mask as the kernel prints it: "0000ffff,0000ffff"
  std::string arch;         // "x86_64", "arm64", "ppc64"
  std::string vendor;       // "GenuineIntel", "AuthenticAMD", ...
  int family_id = 0;
  int model_id = 0;
  CpuFamily family() const { return classify_cpu(arch.c_str(), vendor.c_str(), family_id, model_id); }
};

// One network port behind a NIC (NCCL's <net> element).
struct NetPort {
  std::string name;         // "mlx5_0"
  int dev = 0;              // network device index
  int speed_mbps = 0;       // 0 = unknown
  int port = 1;
  std::string guid = "0x0";
  bool gdr = false;         // GPUDirect RDMA capable
};

struct Node {
  NodeKind kind = NodeKind::gpu;
  // PCIe tree: the node this one hangs off (a pci_switch or, at the top, a cpu); -1 for CPUs and
  // NVSwitches. Only gpu, nic and pci_switch nodes have a parent.
  int parent = -1;
  // For nodes whose parent is a CPU: which of that CPU's PCIe host bridges (root complexes) they
  // sit behind. nvidia-smi calls two host bridges on one NUMA node NODE apart, NCCL calls it PHB.
  int host_bridge = 0;
  PciInfo pci;              // gpu, pci_switch, nic; nvswitch uses only busid
  int dev = -1;             // gpu: its index (CUDA/NVML order); the name everyone else uses
  int sm = 0;               // gpu: compute capability major*10 + minor; 0 = unknown
  int rank = -1;            // gpu: NCCL rank when the source recorded one
  bool gdr = true;          // gpu: GPUDirect capable (NCCL's attribute)
  CpuInfo cpu;              // cpu
  std::vector<NetPort> nets;  // nic
  std::string name;         // nic: RDMA device name ("mlx5_0"); others: optional label
};

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
