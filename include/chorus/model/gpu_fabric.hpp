// A fabric for GPUs from the machine's topology, priced as NCCL prices it for one protocol.
//
// Rank r is GPU r. A message from GPU a to GPU b takes the route topo::PathMatrix chose (fewest
// hops, then the widest bottleneck) and holds each directed physical link on it while its bytes
// move, so messages that cross one NVSwitch port, PCIe switch uplink or socket link take turns:
// the sharing topo models, applied to whatever the schedule sends at the same time.
//
//   bandwidth  the path's bottleneck (NVLink count x per-link figure, PCIe width x rate, ...)
//              times the protocol's efficiency; LL is also capped at NCCL's llMaxBw
//   latency    NCCL's per-hop latency for the protocol and the path's class (NVL/NVB: NVLink,
//              PIX..SYS: PCIe, NET: network), from the ring or the tree table
//   base       NCCL's base latency of the protocol, once per call
//   local      copies inside a GPU are free (HBM is an order of magnitude faster than any link)
//
// LL128 needs in-order 128-byte stores, which NCCL trusts only over NVLink: a fabric with a PCIe
// or slower path between two of its GPUs refuses it (ErrorCode::unsupported), as NCCL does not
// enable it there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../topo/path.hpp"
#include "../topo/topology.hpp"
#include "fabric.hpp"
#include "protocol.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

struct GpuFabricOptions {
  int ranks = 0;                            // the first `ranks` GPUs; 0 = all of them
  Protocol protocol = Protocol::simple;
  LatencyTable table = LatencyTable::ring;
};

inline HopClass hop_class(topo::PathType type) {
  switch (type) {
    case topo::PathType::loc:
    case topo::PathType::nvl:
    case topo::PathType::nvb: return HopClass::nvlink;
    case topo::PathType::net: return HopClass::network;
    default: return HopClass::pcie;
  }
}

// Whether NCCL would run `protocol` between every pair of the first `ranks` GPUs.
inline bool protocol_enabled(const topo::PathMatrix& paths, int ranks, Protocol protocol) {
  if (protocol != Protocol::ll128) return true;
  for (int a = 0; a < ranks; ++a) {
    for (int b = 0; b < ranks; ++b) {
      if (a != b && hop_class(paths.gpu(a, b).type) != HopClass::nvlink) return false;
    }
  }
  return true;
}

inline Fabric gpu_fabric(const topo::Topology& topo, const topo::PathMatrix& paths, const GpuFabricOptions& options) {
  const int gpus = paths.gpu_count();
  const int n = options.ranks == 0 ? gpus : options.ranks;
  if (n < 1 || n > gpus) {
    throw detail::model_error("gpu_fabric", "ranks must be between 1 and the topology's ", gpus, " GPUs, got ",
                              options.ranks);
  }
  if (!protocol_enabled(paths, n, options.protocol)) {
    throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::model::gpu_fabric: ", to_string(options.protocol),
                                                               " needs NVLink between every pair of GPUs (NCCL "
                                                               "does not enable it over PCIe)"));
  }
  const std::vector<topo::Link>& links = paths.links();
  int slowest_sm = 0;
  for (int g = 0; g < n; ++g) {
    const int sm = topo.nodes[paths.gpu_node(g)].sm;
    if (sm > 0 && (slowest_sm == 0 || sm < slowest_sm)) slowest_sm = sm;
  }
  Fabric fabric;
  fabric.ranks = n;
  fabric.resource_count = 2 * static_cast<int>(links.size());
  fabric.local_GBps = 0.0;
  fabric.base_latency_us = base_latency_us(options.table, options.protocol);
  fabric.routes.resize(static_cast<std::size_t>(n) * n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const topo::Path& path = paths.gpu(a, b);
      if (path.type == topo::PathType::dis || path.bw_GBps <= 0.0) {
        throw detail::model_error("gpu_fabric", "GPU ", a, " cannot reach GPU ", b);
      }
      Route route;
      route.GBps = path.bw_GBps * bandwidth_efficiency(options.protocol);
      if (options.protocol == Protocol::ll) route.GBps = std::min(route.GBps, ll_max_GBps(slowest_sm));
      route.latency_us = hop_latency_us(options.table, hop_class(path.type), options.protocol);
      for (std::size_t k = 0; k < path.links.size(); ++k) {
        const int l = path.links[k];
        const bool forward = links[l].a == path.route[k];  // direction a -> b of the link
        route.resources.push_back(2 * l + (forward ? 0 : 1));
      }
      fabric.routes[static_cast<std::size_t>(a) * n + b] = std::move(route);
    }
  }
  fabric.description = chorus::detail::concat(n, " GPUs of ", topo.source.empty() ? "a topology" : topo.source, ", ",
                                              to_string(options.protocol));
  return fabric;
}

inline Fabric gpu_fabric(const topo::Topology& topo, const GpuFabricOptions& options = {}) {
  return gpu_fabric(topo, topo::PathMatrix(topo), options);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
