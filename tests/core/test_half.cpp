#include <catch2/catch.hpp>

#include <chorus/core/half.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

namespace test_half {

using chorus::half;

namespace {

// Reference conversion: pick the nearest of the two neighbouring halves by exact double arithmetic,
// ties to the even bit pattern. Independent of the bit tricks in half::from_float.
std::uint16_t reference_round(float value) {
  if (std::isnan(value)) return 0x7e00;
  const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  // The largest finite non-negative half not above the magnitude, by bisection over the ordered patterns
  // 0x0000..0x7bff (non-negative halves increase with their bits).
  std::uint16_t below = 0, above = 0x7c00;  // to_float(below) <= magnitude < to_float(above), or above is inf
  while (above - below > 1) {
    const auto middle = static_cast<std::uint16_t>((below + above) / 2);
    if (half::to_float(middle) <= magnitude) below = middle; else above = middle;
  }
  if (below == 0x7bff && magnitude >= 65520.0) return sign | 0x7c00;  // rounds to infinity
  const double low = half::to_float(below);
  if (low == magnitude || below == 0x7bff) return sign | below;
  const double high = half::to_float(static_cast<std::uint16_t>(below + 1));
  const double to_low = magnitude - low;
  const double to_high = high - magnitude;
  if (to_low < to_high) return sign | below;
  if (to_high < to_low) return sign | static_cast<std::uint16_t>(below + 1);
  return sign | ((below & 1) ? static_cast<std::uint16_t>(below + 1) : below);
}

}  // namespace

TEST_CASE("half round-trips every finite bit pattern through float", "[half]") {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = half::from_bits(static_cast<std::uint16_t>(bits));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) {
      REQUIRE((bits & 0x7c00) == 0x7c00);
      REQUIRE((bits & 0x03ff) != 0);
      REQUIRE(std::isnan(static_cast<float>(half(f))));
      continue;
    }
    REQUIRE(half(f).bits == bits);
  }
}

TEST_CASE("half known values", "[half]") {
  CHECK(half(1.0f).bits == 0x3c00);
  CHECK(half(-2.0f).bits == 0xc000);
  CHECK(half(65504.0f).bits == 0x7bff);
  CHECK(half(65520.0f).bits == 0x7c00);  // tie between max and the next power: even => infinity
  CHECK(half(std::numeric_limits<float>::infinity()).bits == 0x7c00);
  CHECK(half(5.9604645e-8f).bits == 0x0001);   // smallest subnormal
  CHECK(half(2.9802322e-8f).bits == 0x0000);   // exactly half of it: ties to even => zero
  CHECK(half(-0.0f).bits == 0x8000);
  CHECK(static_cast<float>(half::from_bits(0x3555)) == Approx(0.33325195f));
}

TEST_CASE("half rounds to nearest even like an exact reference", "[half]") {
  // Every finite half's value, the midpoint to the next half (a tie) and the floats on either side of it,
  // both signs: every way a float can round to each of the 2^16 halves.
  for (std::uint16_t bits = 0; bits < 0x7bff; ++bits) {
    const double low = half::to_float(bits);
    const double high = half::to_float(static_cast<std::uint16_t>(bits + 1));
    const float mid = static_cast<float>((low + high) / 2);
    for (float f : {static_cast<float>(low), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      for (float signed_f : {f, -f}) {
        if (half(signed_f).bits != reference_round(signed_f)) {
          INFO("value " << signed_f);
          REQUIRE(half(signed_f).bits == reference_round(signed_f));
        }
      }
    }
  }
}

}  // namespace test_half
