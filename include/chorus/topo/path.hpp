// Paths between devices (GPUs and NICs): for every pair the route NCCL would take, its NCCL type,
// its bottleneck bandwidth, and the token nvidia-smi prints for the pair.
//
// The route follows NCCL's rule (graph/paths.cc): fewest hops first, then the widest bottleneck.
// A route may pass PCIe switches, CPUs and NVSwitches; it may pass through one other GPU only as
// GPU -NVLink- GPU -NVLink- GPU (NCCL's NVB), and never through a NIC. The type is the worst hop:
// NVLink is NVL, a third GPU makes it NVB, PCIe through at most one switch is PIX, through two or
// more PXB, through a CPU PHB, across the socket link SYS.
//
// nvidia-smi's token is not about the route: NV<k> counts the links joining the pair (directly or
// through the NVSwitch fabric) and otherwise the token names the pair's place in the PCIe tree.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"
#include "link.hpp"
#include "path_class.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct Path {
  PathType type = PathType::dis;
  SmiToken token{};
  double bw_GBps = 0.0;    // the narrowest link on the route
  double latency_us = 0.0; // sum of the hops' latencies
  std::vector<int> route;  // node indices, source first
  std::vector<int> links;  // the route's links, as indices into PathMatrix::links()
};

// nvidia-smi's token for pairs of device nodes (GPU or NIC) of one topology. Built once per
// topology: it indexes the NVLink bonds per node, so each pair costs its two nodes' bonds.
class SmiClassifier {
 public:
  explicit SmiClassifier(const Topology& topo);
  SmiToken operator()(int a, int b) const;

 private:
  // The pair's place in the PCIe tree: climb both chains to the lowest common ancestor.
  SmiToken pcie(int a, int b) const;

  const Topology& topo_;
  std::vector<std::vector<std::pair<int, int>>> bonds_;  // per node: (other end, link count)
  std::vector<std::vector<int>> chains_;                  // per node: itself, its parent, ... its CPU
};

// nvidia-smi's token for one pair (build an SmiClassifier for many).
inline SmiToken smi_token(const Topology& topo, int a, int b) { return SmiClassifier(topo)(a, b); }

// Paths between all devices: GPUs first (by index), then NICs (in node order).
class PathMatrix {
 public:
  PathMatrix() = default;
  explicit PathMatrix(const Topology& topo);

  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  int nic_count() const { return static_cast<int>(nics_.size()); }
  int device_count() const { return gpu_count() + nic_count(); }
  // Device d: GPU d for d < gpu_count(), NIC d - gpu_count() after that.
  const Path& device(int x, int y) const { return table_[static_cast<std::size_t>(x) * device_count() + y]; }
  const Path& gpu(int a, int b) const { return device(a, b); }
  const Path& gpu_nic(int gpu, int nic) const { return device(gpu, gpu_count() + nic); }
  int gpu_node(int gpu) const { return gpus_[gpu]; }
  int nic_node(int nic) const { return nics_[nic]; }
  // The typed links the paths run over (links(topology) at construction).
  const std::vector<Link>& links() const { return links_; }

 private:
  std::vector<int> gpus_;
  std::vector<int> nics_;
  std::vector<Link> links_;
  std::vector<Path> table_;
};

inline PathMatrix compute_paths(const Topology& topo) { return PathMatrix(topo); }

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "path_inl.hpp"
#endif
