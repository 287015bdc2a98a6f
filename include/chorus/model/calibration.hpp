// Fits a uniform fabric's alpha (per-message latency) and beta (bandwidth) to measured times of
// one collective, so a machine without published link figures (the host backend: threads over
// shared memory) gets a model from a short measurement.
//
// The model's time for a schedule on uniform_fabric(n, alpha, beta) is t = alpha * A + B / beta,
// where A (the number of messages on the critical path) and B (the microseconds its bytes take
// at 1 GB/s) come from replaying the same schedule twice: once with free bandwidth and alpha = 1,
// once with alpha = 0 and beta = 1. Each measured sample gives one such equation; the fit is the
// least-squares solution with every equation scaled by its measured time (so a 4 KiB and a
// 16 MiB sample count alike), with alpha held at 0 if the unconstrained fit makes it negative.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "../algo/build.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "fabric.hpp"
#include "simulate.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

struct Sample {
  std::size_t count = 0;  // elements per call
  double seconds = 0.0;   // measured time per call
};

struct AlphaBeta {
  double alpha_us = 0.0;
  double beta_GBps = 0.0;
};

// `collective` with `pattern` on `ranks` ranks, elements of `element_size` bytes, pipelined at
// `slice` elements (as the backend runs it), measured at `samples` (two sizes or more).
inline AlphaBeta fit_alpha_beta(Collective collective, algo::Pattern pattern, int ranks, std::size_t element_size,
                                std::size_t slice, const std::vector<Sample>& samples) {
  if (ranks < 2) throw detail::model_error("fit_alpha_beta", "need at least 2 ranks to see a message, got ", ranks);
  if (samples.size() < 2) {
    throw detail::model_error("fit_alpha_beta", "need at least 2 samples, got ", samples.size());
  }
  algo::Options options{};
  options.slice = slice;
  const Fabric latency_only = uniform_fabric(ranks, 1.0, 1.0e30);
  const Fabric bandwidth_only = uniform_fabric(ranks, 0.0, 1.0);
  double aa = 0.0, ab = 0.0, bb = 0.0, at = 0.0, bt = 0.0;  // normal equations
  std::vector<double> a_of, b_of;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0.0) || !std::isfinite(s.seconds)) {
      throw detail::model_error("fit_alpha_beta", "measured time must be positive, got ", s.seconds, " s for count ",
                                s.count);
    }
    const algo::Schedule schedule = algo::build(collective, pattern, ranks, s.count, 0, options);
    const double t = s.seconds * 1.0e6;
    const double a = simulate_us(schedule, latency_only, element_size) / t;  // scaled by 1/t
    const double b = simulate_us(schedule, bandwidth_only, element_size) / t;
    aa += a * a;
    ab += a * b;
    bb += b * b;
    at += a;  // t / t
    bt += b;
    a_of.push_back(a);
    b_of.push_back(b);
  }
  const double det = aa * bb - ab * ab;
  double alpha = det != 0.0 ? (at * bb - bt * ab) / det : -1.0;
  double inverse_beta = det != 0.0 ? (aa * bt - ab * at) / det : 0.0;
  if (!(alpha >= 0.0)) {
    alpha = 0.0;
    inverse_beta = bb > 0.0 ? bt / bb : 0.0;
  }
  if (!(inverse_beta > 0.0)) {
    throw detail::model_error("fit_alpha_beta", "the measured times do not grow with size (", samples.size(),
                              " samples), so they give no bandwidth");
  }
  return AlphaBeta{alpha, 1.0 / inverse_beta};
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
