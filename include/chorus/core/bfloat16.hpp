// chorus::bfloat16: the top 16 bits of an IEEE float, with the layout of CUDA's __nv_bfloat16.
// Conversion from float rounds to nearest, ties to even; NaN stays NaN.
#pragma once

#include <cstdint>

#include "bit_cast.hpp"
#include "config.hpp"

namespace chorus {

struct bfloat16 {
  std::uint16_t bits = 0;

  bfloat16() = default;
  CHORUS_HOST_DEVICE explicit bfloat16(float value) : bits(from_float(value)) {}
  CHORUS_HOST_DEVICE explicit operator float() const {
    return detail::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }

  CHORUS_HOST_DEVICE static bfloat16 from_bits(std::uint16_t raw) {
    bfloat16 b;
    b.bits = raw;
    return b;
  }
  friend CHORUS_HOST_DEVICE bool operator==(bfloat16 a, bfloat16 b) { return a.bits == b.bits; }
  friend CHORUS_HOST_DEVICE bool operator!=(bfloat16 a, bfloat16 b) { return a.bits != b.bits; }

  CHORUS_HOST_DEVICE static std::uint16_t from_float(float value) {
    const std::uint32_t f = detail::bit_cast<std::uint32_t>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x0040u);  // quiet NaN
    const std::uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
    return static_cast<std::uint16_t>((f + rounding) >> 16);
  }
};

static_assert(sizeof(bfloat16) == 2, "chorus::bfloat16 must match __nv_bfloat16's layout");

}  // namespace chorus
