// chorus::bfloat16: the top 16 bits of an IEEE float, with the layout of CUDA's __nv_bfloat16.
// Conversion from float rounds to nearest, ties to even; NaN stays NaN. On a GPU of compute capability 8.0
// or newer the rounding of non-NaN values is the hardware's (cvt.rn.bf16.f32), which rounds the same way
// (tests/core/test_bfloat16.cpp checks the software path at every midpoint; tests/cuda/test_cuda_conversions.cu
// compares the two on a GPU); NaNs keep their payload's top bits on both.
#pragma once

#include <cstdint>

#include "bit_cast.hpp"
#include "config.hpp"

CHORUS_NAMESPACE_BEGIN

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
    const auto quiet_nan = static_cast<std::uint16_t>((f >> 16) | 0x0040u);  // keeps the payload's top bits
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(value));
    return (f & 0x7fffffffu) > 0x7f800000u ? quiet_nan : b;  // a select, not a branch
#else
    if ((f & 0x7fffffffu) > 0x7f800000u) return quiet_nan;
    const std::uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
    return static_cast<std::uint16_t>((f + rounding) >> 16);
#endif
  }
};

static_assert(sizeof(bfloat16) == 2, "chorus::bfloat16 must match __nv_bfloat16's layout");

CHORUS_NAMESPACE_END  // namespace chorus
