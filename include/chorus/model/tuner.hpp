// Picks the cheapest way to run a call by asking the model about every candidate: every
// algorithm that implements the collective on a fabric (the host), and, for GPUs, every
// algorithm x protocol NCCL would enable on the topology. NCCL's tuner does the same
// minimisation over its own closed-form costs (graph/tuning.cc: "compute time for every enabled
// (algo, proto) pair, take the minimum").
//
// Not yet wired into Algorithm::automatic: the host backend's hand-set thresholds
// (host/tuning.hpp) are measured, and the model replaces them only where it is measured to be
// never worse (docs/cost-model.md, "Tuning").
#pragma once

#include <cstddef>
#include <limits>

#include "../core/algorithm.hpp"
#include "../core/config.hpp"
#include "../topo/path.hpp"
#include "gpu_fabric.hpp"
#include "predict.hpp"
#include "protocol.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

struct Choice {
  Algorithm algorithm = Algorithm::automatic;
  Protocol protocol = Protocol::simple;  // meaningful for GPU fabrics only
  Prediction prediction;
};

// The fastest algorithm for the call on `fabric`.
inline Choice choose(const Fabric& fabric, Collective collective, std::size_t count, std::size_t element_size,
                     const PredictOptions& options = {}) {
  Choice best;
  best.prediction.time_us = std::numeric_limits<double>::infinity();
  for (int a = 1; a < kAlgorithmCount; ++a) {
    const auto algorithm = static_cast<Algorithm>(a);
    if (!supports(collective, algorithm)) continue;
    const Prediction p = predict(fabric, collective, algorithm, count, element_size, options);
    if (p.time_us < best.prediction.time_us) best = Choice{algorithm, Protocol::simple, p};
  }
  return best;
}

// The fastest algorithm and protocol on the first `ranks` GPUs of a topology (0 = all), with
// pipelining depth chosen per candidate. Trees are priced with NCCL's tree latencies.
inline Choice choose_gpu(const topo::Topology& topo, int ranks, Collective collective, std::size_t count,
                         std::size_t element_size) {
  const topo::PathMatrix paths(topo);
  const int n = ranks == 0 ? paths.gpu_count() : ranks;
  Choice best;
  best.prediction.time_us = std::numeric_limits<double>::infinity();
  PredictOptions options;
  options.best_pipelining = true;
  for (Protocol protocol : kProtocols) {
    if (n >= 1 && n <= paths.gpu_count() && !protocol_enabled(paths, n, protocol)) continue;
    for (int a = 1; a < kAlgorithmCount; ++a) {
      const auto algorithm = static_cast<Algorithm>(a);
      if (!supports(collective, algorithm)) continue;
      const LatencyTable table = algorithm == Algorithm::tree ? LatencyTable::tree : LatencyTable::ring;
      const Fabric fabric = gpu_fabric(topo, paths, GpuFabricOptions{ranks, protocol, table});
      const Prediction p = predict(fabric, collective, algorithm, count, element_size, options);
      if (p.time_us < best.prediction.time_us) best = Choice{algorithm, protocol, p};
    }
  }
  return best;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
