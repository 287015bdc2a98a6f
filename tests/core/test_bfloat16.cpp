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

}  // namespace test_bfloat16
