// Algorithm and bus bandwidth, defined exactly as nccl-tests defines them. They live in core
// because both the benchmarks (bench/) and the cost model's predictions (model/) report them, and
// a prediction must be comparable with a measurement number for number.
//
// algbw = bytes / time with GB = 1e9. busbw = algbw * factor: the rate each rank's link would
// have to sustain if the algorithm were optimal, e.g. all_reduce moves every element 2(n-1) times
// over n links, so busbw compares against the hardware peak for any n. With n = 1 the factors
// of 2(n-1)/n and (n-1)/n are 0 (nothing crosses a link), as in nccl-tests. Which bytes a
// collective's algbw divides by is bench/bandwidth.hpp's Shape::bytes.
#pragma once

#include <cstddef>

#include "collective.hpp"
#include "config.hpp"

CHORUS_NAMESPACE_BEGIN

inline double bus_factor(Collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case Collective::all_reduce: return 2.0 * (n - 1.0) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all: return (n - 1.0) / n;
    case Collective::broadcast:
    case Collective::reduce: return 1.0;
  }
  return 1.0;
}

// GB/s with GB = 1e9. A zero or negative time (a 0-byte row timed below the clock's
// resolution) reports 0 rather than infinity.
inline double algbw_gbps(std::size_t bytes, double seconds) {
  return seconds > 0.0 ? static_cast<double>(bytes) / 1.0e9 / seconds : 0.0;
}

inline double busbw_gbps(Collective collective, int ranks, std::size_t bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * bus_factor(collective, ranks);
}

CHORUS_NAMESPACE_END  // namespace chorus
