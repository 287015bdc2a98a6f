#include <catch2/catch.hpp>

#include <chorus/core/bfloat16.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace test_bfloat16 {

using chorus::bfloat16;

namespace {
float from_bits32(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

TEST_CASE("bfloat16 keeps the top half of a float exactly", "[bfloat16]") {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = from_bits32(bits << 16);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(static_cast<float>(bfloat16(f))));
      continue;
    }
    REQUIRE(bfloat16(f).bits == bits);
    REQUIRE(static_cast<float>(bfloat16::from_bits(static_cast<std::uint16_t>(bits))) == f);
  }
}

TEST_CASE("bfloat16 rounds to nearest, ties to even", "[bfloat16]") {
  CHECK(bfloat16(from_bits32(0x3f808000)).bits == 0x3f80);  // tie, even below
  CHECK(bfloat16(from_bits32(0x3f818000)).bits == 0x3f82);  // tie, odd below -> up
  CHECK(bfloat16(from_bits32(0x3f808001)).bits == 0x3f81);  // just above the tie
  CHECK(bfloat16(from_bits32(0x3f807fff)).bits == 0x3f80);  // just below the tie
  CHECK(bfloat16(from_bits32(0x7f7fffff)).bits == 0x7f80);  // max float rounds to infinity
  CHECK(bfloat16(-0.0f).bits == 0x8000);
  const float nan_with_low_payload = from_bits32(0x7f800001);  // would truncate to infinity
  CHECK(std::isnan(static_cast<float>(bfloat16(nan_with_low_payload))));
  CHECK(bfloat16(std::numeric_limits<float>::infinity()).bits == 0x7f80);
}

// Every finite bfloat16, the midpoint to the next (a tie) and the floats on either side of it, both signs,
// against rounding done in double arithmetic: every way a float can round to each of the 2^16 values.
TEST_CASE("bfloat16 rounds every midpoint and its neighbours to nearest even", "[bfloat16]") {
  const auto reference = [](float value) -> std::uint16_t {
    std::uint32_t bits;
    std::memcpy(&bits, &value, 4);
    const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const double magnitude = std::fabs(static_cast<double>(value));
    const auto below = static_cast<std::uint16_t>((bits & 0x7fffffffu) >> 16);  // truncation: the value not above
    const double low = std::fabs(static_cast<double>(from_bits32(static_cast<std::uint32_t>(below) << 16)));
    if (low == magnitude) return sign | below;
    const double high = below == 0x7f7f ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(from_bits32(static_cast<std::uint32_t>(below + 1) << 16)));
    const double to_low = magnitude - low, to_high = high - magnitude;
    if (to_low < to_high) return sign | below;
    if (to_high < to_low) return sign | static_cast<std::uint16_t>(below + 1);  // 0x7f7f + 1: infinity
    return sign | ((below & 1) ? static_cast<std::uint16_t>(below + 1) : below);
  };
  for (std::uint32_t bits = 0; bits < 0x7f80; ++bits) {
    const float low = from_bits32(bits << 16);
    const float mid = from_bits32((bits << 16) | 0x8000u);
    for (float f : {low, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      for (float signed_f : {f, -f}) {
        if (bfloat16(signed_f).bits != reference(signed_f)) {
          INFO("value bits " << std::hex << bits);
          REQUIRE(bfloat16(signed_f).bits == reference(signed_f));
        }
      }
    }
  }
}

}  // namespace test_bfloat16
