// What the cost model prices a schedule on: for every ordered pair of ranks a route (the
// bandwidth and latency of a message from one to the other, and the resources it occupies while
// it moves), plus what a rank pays for local copies and what a call pays once.
//
// A resource is anything two messages cannot cross at full speed at the same time: a directed
// physical link (GPU fabrics, built from a topo::Topology by gpu_fabric), or a rank's memory port
// (the host backend: uniform_fabric). Messages that share a resource take turns on it, so k
// messages over one link take k times as long: the sharing topo models for NVSwitch and PCIe
// switch uplinks falls out of the routes instead of being a separate rule.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

struct Route {
  double GBps = 0.0;            // bandwidth for this pair's messages (1e9 bytes/s)
  double latency_us = 0.0;      // added to every message (alpha)
  std::vector<int> resources;   // indices into Fabric::resource_count, held while bytes move
};

struct Fabric {
  int ranks = 0;
  int resource_count = 0;
  std::vector<Route> routes;    // routes[from * ranks + to]; the diagonal is unused
  double local_GBps = 0.0;      // a rank's own copy or reduce steps; 0 = free
  double base_latency_us = 0.0; // charged once per call (launch, setup)
  std::string description;      // for people: "8 GPUs, Simple, NVLink ..." or "host: alpha ..., beta ..."

  const Route& route(int from, int to) const { return routes[static_cast<std::size_t>(from) * ranks + to]; }
};

namespace detail {
template <class... Parts>
Error model_error(const char* call, const Parts&... parts) {
  return Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::model::", call, ": ", parts...));
}
}  // namespace detail

// Every pair of ranks alike: a message costs alpha_us + bytes / beta_GBps, and a rank receives
// one message at a time (its memory port is the resource), as host threads do: the receiving
// thread copies or reduces the peer's data itself. Local copies run at beta too.
inline Fabric uniform_fabric(int ranks, double alpha_us, double beta_GBps) {
  if (ranks < 1) throw detail::model_error("uniform_fabric", "ranks must be at least 1, got ", ranks);
  if (!(alpha_us >= 0.0) || !(beta_GBps > 0.0)) {
    throw detail::model_error("uniform_fabric", "need alpha >= 0 us and beta > 0 GB/s, got alpha ", alpha_us,
                              " and beta ", beta_GBps);
  }
  Fabric fabric;
  fabric.ranks = ranks;
  fabric.resource_count = ranks;
  fabric.local_GBps = beta_GBps;
  fabric.routes.resize(static_cast<std::size_t>(ranks) * ranks);
  for (int from = 0; from < ranks; ++from) {
    for (int to = 0; to < ranks; ++to) {
      fabric.routes[static_cast<std::size_t>(from) * ranks + to] = Route{beta_GBps, alpha_us, {to}};
    }
  }
  fabric.description = chorus::detail::concat("uniform: alpha ", alpha_us, " us, beta ", beta_GBps, " GB/s");
  return fabric;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
