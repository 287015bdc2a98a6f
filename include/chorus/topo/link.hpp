// The edges of the topology graph, typed, each with the bandwidth and latency chorus prices it at.
#pragma once
#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

enum class LinkKind {
  nvlink,     // GPU-GPU, GPU-NVSwitch or GPU-CPU (POWER9); `count` bonded links
  pcie,       // a device or switch to its parent; `gts` x `width`
  inter_cpu,  // the socket interconnect between two NUMA nodes (QPI/UPI, Infinity Fabric, ...)
  network,    // a NIC's port to the outside network; b == -1
};

inline const char* to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink: return "NVLink";
    case LinkKind::pcie: return "PCIe";
    case LinkKind::inter_cpu: return "inter-CPU";
    case LinkKind::network: return "network";
  }
  return "?";
}

// Links are symmetric: bw_GBps is available in each direction at once.
struct Link {
  LinkKind kind = LinkKind::pcie;
  int a = -1;             // node indices; for pcie a is the child, b the parent
  int b = -1;
  int count = 0;          // nvlink: number of bonded links
  int sm = 0;             // nvlink: the GPU generation the per-link figure was taken from
  double gts = 0.0;       // pcie: signalling rate used
  int width = 0;          // pcie: lanes used
  double bw_GBps = 0.0;
  double latency_us = 0.0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
