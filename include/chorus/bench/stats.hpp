// Summary statistics over repeated timings (per-iteration or per-rank samples).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

struct Summary {
  std::size_t samples = 0;
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  double median = 0.0;
  double p99 = 0.0;     // nearest-rank 99th percentile
  double stddev = 0.0;  // population standard deviation
  double cv = 0.0;      // stddev / mean: how noisy the measurement is (0 when mean is 0)
};

namespace detail {
inline void require_samples(const std::vector<double>& values, const char* call) {
  if (values.empty()) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::bench::", call, ": no samples"));
  }
}
}  // namespace detail

// Nearest-rank percentile (p in [0, 100]): the smallest sample with at least p% of the samples at
// or below it, so it is always one of the measured values.
inline double percentile(std::vector<double> values, double p) {
  detail::require_samples(values, "percentile");
  if (!(p >= 0.0 && p <= 100.0)) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::bench::percentile: p = ", p,
                                                                    " is outside [0, 100]"));
  }
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[rank == 0 ? 0 : rank - 1];
}

// The middle sample, or the mean of the two middle samples for an even count.
inline double median(std::vector<double> values) {
  detail::require_samples(values, "median");
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

inline double mean(const std::vector<double>& values) {
  detail::require_samples(values, "mean");
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

inline Summary summarize(const std::vector<double>& values) {
  detail::require_samples(values, "summarize");
  Summary s;
  s.samples = values.size();
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  s.mean = mean(values);
  s.median = median(values);
  s.p99 = percentile(values, 99.0);
  double squares = 0.0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(squares / static_cast<double>(values.size()));
  s.cv = s.mean != 0.0 ? s.stddev / s.mean : 0.0;
  return s;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
