// The nccl-tests size sweep: -b min, -e max, then either -f factor (multiply) or -i step (add).
// Sizes read like nccl-tests' ("32M", "1K", "8G", "1024"), with binary multiples: K = 1024.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

namespace detail {
inline Error size_error(std::string_view text, const char* why) {
  return Error(ErrorCode::invalid_argument,
               chorus::detail::concat("chorus::bench::parse_size: \"", text, "\" ", why,
                                      " (expected a whole number of bytes with an optional K, M, G or T "
                                      "suffix, e.g. 1024, 32M, 8G)"));
}
inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace detail

// "1024" -> 1024, "1K" -> 1024, "32M" -> 33554432, "8G" -> 8589934592. The suffix is
// case-insensitive and may be followed by "B" or "iB" ("32MB", "32MiB": all binary, as in
// nccl-tests). Throws chorus::Error for anything else: empty text, signs, fractions, spaces,
// unknown suffixes, values past SIZE_MAX.
inline std::size_t parse_size(std::string_view text) {
  std::size_t pos = 0;
  std::size_t value = 0;
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    const auto digit = static_cast<std::size_t>(text[pos] - '0');
    if (value > (kMax - digit) / 10) throw detail::size_error(text, "is too large");
    value = value * 10 + digit;
    ++pos;
  }
  if (pos == 0) throw detail::size_error(text, "does not start with a digit");
  std::string suffix;
  for (; pos < text.size(); ++pos) suffix += detail::lower(text[pos]);
  int shift = 0;
  std::string_view unit = suffix;
  if (!unit.empty() && unit != "b") {
    switch (unit[0]) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: throw detail::size_error(text, "has an unknown unit");
    }
    unit.remove_prefix(1);
    if (!unit.empty() && unit != "b" && unit != "ib") throw detail::size_error(text, "has an unknown unit");
  }
  if (value > (kMax >> shift)) throw detail::size_error(text, "is too large");
  return value << shift;
}

// Defaults are nccl-tests': one 32 MiB size; a step of 1 MiB when -e exceeds -b and no -f.
struct SweepSpec {
  std::size_t min_bytes = std::size_t{32} << 20;
  std::size_t max_bytes = std::size_t{32} << 20;
  std::size_t step_bytes = std::size_t{1} << 20;  // used when step_factor == 0
  std::size_t step_factor = 0;                    // 0: add step_bytes; otherwise multiply (>= 2)
};

// A sweep longer than this is a typo (e.g. -i 1 up to 8G), not a benchmark.
inline constexpr std::size_t kMaxSweepSizes = 100000;

// min, then min grown by the step or factor while it stays <= max (max itself is included only if
// the steps land on it, as in nccl-tests). Throws chorus::Error when min > max, or when the sweep
// could never reach max: a factor below 2, a zero step, or a factor sweep starting at 0.
inline std::vector<std::size_t> size_sweep(const SweepSpec& spec) {
  const auto fail = [](auto... parts) {
    return Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::bench::size_sweep: ", parts...));
  };
  if (spec.min_bytes > spec.max_bytes) {
    throw fail("minimum size ", spec.min_bytes, " (-b) exceeds maximum size ", spec.max_bytes, " (-e)");
  }
  std::vector<std::size_t> sizes{spec.min_bytes};
  if (spec.min_bytes == spec.max_bytes) return sizes;  // nothing to grow: any step is fine
  if (spec.step_factor == 1) throw fail("step factor (-f) must be at least 2; 1 would never grow the size");
  if (spec.step_factor == 0 && spec.step_bytes == 0) throw fail("step (-i) must be above 0 to reach -e");
  if (spec.step_factor != 0 && spec.min_bytes == 0) {
    throw fail("a factor sweep (-f) cannot start at 0 bytes: 0 times ", spec.step_factor, " stays 0; use -b 1 or more");
  }
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  std::size_t size = spec.min_bytes;
  for (;;) {
    if (spec.step_factor != 0) {
      if (size > kMax / spec.step_factor) break;
      size *= spec.step_factor;
    } else {
      if (size > kMax - spec.step_bytes) break;
      size += spec.step_bytes;
    }
    if (size > spec.max_bytes) break;
    if (sizes.size() == kMaxSweepSizes) {
      throw fail("the sweep from ", spec.min_bytes, " to ", spec.max_bytes, " has more than ", kMaxSweepSizes,
                 " sizes; use a larger step (-i) or a factor (-f)");
    }
    sizes.push_back(size);
  }
  return sizes;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
