// chorus::half: IEEE binary16 storage with the bit layout of CUDA's __half.
// Arithmetic happens in float; conversion from float rounds to nearest, ties to even. On a GPU the
// conversions of non-NaN values are the hardware's (cvt.rn.f16.f32, cvt.f32.f16: one instruction instead
// of some twenty integer operations per combine); both round to nearest even, so the bits are the
// software path's (tests/core/test_half.cpp checks that path against exact rounding for every half and
// every midpoint; tests/cuda/test_cuda_conversions.cu compares the two on a GPU). NaNs keep their payload
// on both (a select after the instruction on the GPU), so the twin and the GPU agree on those bits too.
#pragma once

#include <cstdint>

#include "bit_cast.hpp"
#include "config.hpp"

CHORUS_NAMESPACE_BEGIN

struct half {
  std::uint16_t bits = 0;

  half() = default;
  CHORUS_HOST_DEVICE explicit half(float value) : bits(from_float(value)) {}
  CHORUS_HOST_DEVICE explicit operator float() const { return to_float(bits); }

  CHORUS_HOST_DEVICE static half from_bits(std::uint16_t raw) {
    half h;
    h.bits = raw;
    return h;
  }
  friend CHORUS_HOST_DEVICE bool operator==(half a, half b) { return a.bits == b.bits; }
  friend CHORUS_HOST_DEVICE bool operator!=(half a, half b) { return a.bits != b.bits; }

  CHORUS_HOST_DEVICE static std::uint16_t from_float(float value) {
    const std::uint32_t f = detail::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (f >> 16) & 0x8000u;
    const std::uint32_t abs = f & 0x7fffffffu;
#if defined(__CUDA_ARCH__)
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(value));
    // A select, not a branch to the software path: NaN keeps its payload, quieted, as below.
    return abs > 0x7f800000u ? static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu)) : h;
#else
    if (abs >= 0x7f800000u) {  // inf or NaN; keep NaNs quiet and non-zero
      return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u | ((abs >> 13) & 0x3ffu) : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
    if (abs < 0x38800000u) {  // result is subnormal (or zero) in half
      if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal
      const std::uint32_t exponent = abs >> 23;
      const std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
      const std::uint32_t shift = 126u - exponent;  // value / 2^-24 == mantissa >> shift
      std::uint32_t result = mantissa >> shift;
      const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
      const std::uint32_t halfway = 1u << (shift - 1u);
      if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
      return static_cast<std::uint16_t>(sign | result);
    }
    std::uint32_t result = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
    const std::uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;  // may carry into the exponent: correct
    return static_cast<std::uint16_t>(sign | result);
#endif
  }

  CHORUS_HOST_DEVICE static float to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(h)));
    // A select: NaN keeps its payload, as below.
    const std::uint32_t nan = (static_cast<std::uint32_t>(h & 0x8000u) << 16) | 0x7f800000u | (static_cast<std::uint32_t>(h & 0x3ffu) << 13);
    return (h & 0x7fffu) > 0x7c00u ? detail::bit_cast<float>(nan) : f;
#else
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t f;
    if (exponent == 0x1fu) {
      f = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
      f = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
      f = sign;
    } else {  // subnormal: normalise into float's wider exponent range
      std::uint32_t e = 113u;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
      }
      f = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return detail::bit_cast<float>(f);
#endif
  }
};

static_assert(sizeof(half) == 2, "chorus::half must match __half's layout");

CHORUS_NAMESPACE_END  // namespace chorus
