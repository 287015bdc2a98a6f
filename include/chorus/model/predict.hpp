// The model's answer for one call: build the schedule the algorithm would run, replay it on a
// fabric (simulate.hpp), and report time, algbw and busbw the way chorus-bench and nccl-tests
// measure them (core/bus_bandwidth.hpp), so a prediction can stand in the table beside a measurement.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "../algo/build.hpp"
#include "../core/algorithm.hpp"
#include "../core/bus_bandwidth.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "fabric.hpp"
#include "simulate.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

struct Prediction {
  algo::Pattern pattern = algo::Pattern::ring;
  std::size_t slice = 0;   // elements per pipelining slice the time was priced at; 0 = unsliced
  double time_us = 0.0;
  double algbw_GBps = 0.0;
  double busbw_GBps = 0.0;
};

struct PredictOptions {
  // The slice the backend runs with (host: 256 KiB / element size). Ignored when
  // best_pipelining is set.
  std::size_t slice = 0;
  // Price the schedule at the best of 1, 2, 4, ... max_pipeline_depth slices per buffer (the
  // depth a GPU kernel would choose) instead of at `slice`.
  bool best_pipelining = false;
  std::size_t max_pipeline_depth = 256;
  std::vector<int> ring_order;  // for ring and chain patterns; empty = rank order
  int root = 0;                 // broadcast and reduce
};

// The bytes algbw divides by: the larger of the send and receive buffers (as bench::shape_of counts them).
inline std::size_t call_bytes(Collective collective, std::size_t count, std::size_t element_size, int ranks) {
  const std::size_t in = send_count(collective, count, ranks);
  const std::size_t out = recv_count(collective, count, ranks);
  return (in > out ? in : out) * element_size;
}

// Time of `collective` with `count` elements (the count argument of the call) of `element_size`
// bytes on every rank of `fabric`, run with `algorithm` (not automatic: the tuner resolves that).
inline Prediction predict(const Fabric& fabric, Collective collective, Algorithm algorithm, std::size_t count,
                          std::size_t element_size, const PredictOptions& options = {}) {
  const int n = fabric.ranks;
  if (n < 1) throw detail::model_error("predict", "the fabric has ", n, " ranks; need at least 1");
  if (element_size == 0) throw detail::model_error("predict", "element size must be positive");
  if (algorithm == Algorithm::automatic) {
    throw detail::model_error("predict", "algorithm automatic has no schedule; ask the tuner (model/tuner.hpp)");
  }
  if (static_cast<int>(algorithm) < 0 || static_cast<int>(algorithm) >= kAlgorithmCount) {
    throw detail::model_error("predict", "unknown algorithm ", static_cast<int>(algorithm));
  }
  if (!supports(collective, algorithm)) {
    throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::model::predict: ", to_string(algorithm),
                                                               " does not implement ", to_string(collective),
                                                               " (choose from ", algorithm_choices(collective), ")"));
  }
  if (options.root < 0 || options.root >= n) {
    throw detail::model_error("predict", "root ", options.root, " is out of range for ", n, " ranks");
  }
  const algo::Pattern pattern = algo::pattern_for(algorithm);
  algo::Options build{};
  build.ring_order = options.ring_order;
  const auto price = [&](std::size_t slice) {
    build.slice = slice;
    return simulate_us(algo::build(collective, pattern, n, count, options.root, build), fabric, element_size);
  };
  Prediction best;
  best.pattern = pattern;
  if (options.best_pipelining) {
    best.time_us = std::numeric_limits<double>::infinity();
    for (std::size_t depth = 1; depth <= options.max_pipeline_depth; depth *= 2) {
      const std::size_t slice = depth == 1 ? 0 : (count + depth - 1) / depth;
      if (depth > 1 && (slice == 0 || count / depth == 0)) break;
      const double t = price(slice);
      if (t < best.time_us) {
        best.time_us = t;
        best.slice = slice;
      }
    }
  } else {
    best.slice = options.slice;
    best.time_us = price(options.slice);
  }
  const std::size_t bytes = call_bytes(collective, count, element_size, n);
  const double seconds = best.time_us * 1.0e-6;
  best.algbw_GBps = algbw_gbps(bytes, seconds);
  best.busbw_GBps = busbw_gbps(collective, n, bytes, seconds);
  return best;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
