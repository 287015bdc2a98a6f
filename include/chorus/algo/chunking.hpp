// Index arithmetic shared by schedules and kernels: how a range splits into parts and slices.
#pragma once

#include <cstddef>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

struct Range {
  std::size_t offset = 0;
  std::size_t count = 0;
};

// Part `index` of `count` elements split into `parts` near-equal parts; the first count % parts
// parts get one extra element, so sizes differ by at most one and empty parts come last.
CHORUS_HOST_DEVICE constexpr Range chunk_range(std::size_t count, std::size_t parts, std::size_t index) {
  const std::size_t base = count / parts;
  const std::size_t extra = count % parts;
  const std::size_t offset = index * base + (index < extra ? index : extra);
  return Range{offset, base + (index < extra ? 1 : 0)};
}

// Number of slices of at most `slice` elements needed to cover `count` (at least one, so a
// zero-length chunk still has one, empty, pipeline stage and every rank agrees on the step count).
CHORUS_HOST_DEVICE constexpr std::size_t slice_count(std::size_t count, std::size_t slice) {
  if (slice == 0 || count <= slice) return 1;
  return (count + slice - 1) / slice;
}

// Slice `index` of a range cut into `slices` near-equal pieces.
CHORUS_HOST_DEVICE constexpr Range slice_of(Range whole, std::size_t slices, std::size_t index) {
  const Range part = chunk_range(whole.count, slices, index);
  return Range{whole.offset + part.offset, part.count};
}

// Positive modulo for ring arithmetic (rank - k may be negative).
CHORUS_HOST_DEVICE constexpr int mod(int value, int n) { return ((value % n) + n) % n; }

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
