// Size parsing ("32M") and the -b/-e/-f/-i sweep, including every way a sweep can be malformed.
#include <catch2/catch.hpp>
#include <chorus/bench/sizes.hpp>

#include <limits>
#include <string>

namespace test_sizes {

using namespace chorus::bench;

namespace {
constexpr std::size_t kK = 1024, kM = kK * 1024, kG = kM * 1024;

SweepSpec factor_sweep(std::size_t b, std::size_t e, std::size_t f) {
  SweepSpec s;
  s.min_bytes = b;
  s.max_bytes = e;
  s.step_factor = f;
  return s;
}
SweepSpec step_sweep(std::size_t b, std::size_t e, std::size_t i) {
  SweepSpec s;
  s.min_bytes = b;
  s.max_bytes = e;
  s.step_bytes = i;
  return s;
}
std::string error_text(const SweepSpec& spec) {
  try {
    size_sweep(spec);
  } catch (const chorus::Error& e) {
    CHECK(e.code() == chorus::ErrorCode::invalid_argument);
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("parse_size reads plain numbers and binary suffixes") {
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("1024") == 1024);
  CHECK(parse_size("1K") == kK);
  CHECK(parse_size("1k") == kK);
  CHECK(parse_size("32M") == 32 * kM);
  CHECK(parse_size("32m") == 32 * kM);
  CHECK(parse_size("8G") == 8 * kG);
  CHECK(parse_size("2T") == 2 * kG * 1024);
  CHECK(parse_size("32MB") == 32 * kM);
  CHECK(parse_size("32MiB") == 32 * kM);
  CHECK(parse_size("4kib") == 4 * kK);
  CHECK(parse_size("17B") == 17);
  CHECK(parse_size("007") == 7);
  CHECK(parse_size("18446744073709551615") == std::numeric_limits<std::size_t>::max());
}

TEST_CASE("parse_size rejects bad text with chorus::Error naming it") {
  for (const char* bad : {"", "M", "-1", "+5", "1.5M", " 1", "1 ", "1X", "1KK", "1Mx", "1MiBs", "K1", "0x10",
                          "18446744073709551616", "16777216T", "99999999999999999999"}) {
    INFO("text \"" << bad << "\"");
    try {
      parse_size(bad);
      FAIL("accepted");
    } catch (const chorus::Error& e) {
      CHECK(e.code() == chorus::ErrorCode::invalid_argument);
      CHECK(std::string(e.what()).find(std::string("\"") + bad + "\"") != std::string::npos);
    }
  }
}

TEST_CASE("a factor sweep multiplies until it passes -e") {
  CHECK(size_sweep(factor_sweep(8, 128, 2)) == std::vector<std::size_t>{8, 16, 32, 64, 128});
  CHECK(size_sweep(factor_sweep(8, 100, 2)) == std::vector<std::size_t>{8, 16, 32, 64});
  CHECK(size_sweep(factor_sweep(1, 1000, 10)) == std::vector<std::size_t>{1, 10, 100, 1000});
  CHECK(size_sweep(factor_sweep(3, 3, 2)) == std::vector<std::size_t>{3});
  CHECK(size_sweep(factor_sweep(8, 8 * kG, 2)).size() == 31);
}

TEST_CASE("an additive sweep steps by -i") {
  CHECK(size_sweep(step_sweep(0, 10, 5)) == std::vector<std::size_t>{0, 5, 10});
  CHECK(size_sweep(step_sweep(1, 10, 4)) == std::vector<std::size_t>{1, 5, 9});
  CHECK(size_sweep(step_sweep(7, 7, 0)) == std::vector<std::size_t>{7});
  CHECK(size_sweep(SweepSpec{}) == std::vector<std::size_t>{32 * kM});  // nccl-tests' default
  CHECK(size_sweep(step_sweep(kM, 4 * kM, kM)) == std::vector<std::size_t>{kM, 2 * kM, 3 * kM, 4 * kM});
}

TEST_CASE("sweeps near SIZE_MAX stop instead of overflowing") {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  CHECK(size_sweep(factor_sweep(kMax / 2, kMax, 2)) == std::vector<std::size_t>{kMax / 2, kMax - 1});
  CHECK(size_sweep(factor_sweep(kMax / 2 + 1, kMax, 3)) == std::vector<std::size_t>{kMax / 2 + 1});
  CHECK(size_sweep(step_sweep(kMax - 5, kMax, 4)) == std::vector<std::size_t>{kMax - 5, kMax - 1});
}

TEST_CASE("malformed sweeps throw instead of looping or exploding") {
  CHECK_THAT(error_text(factor_sweep(64, 8, 2)), Catch::Contains("exceeds maximum size"));
  CHECK_THAT(error_text(step_sweep(9, 8, 1)), Catch::Contains("(-b)"));
  CHECK_THAT(error_text(factor_sweep(8, 64, 1)), Catch::Contains("at least 2"));
  CHECK_THAT(error_text(step_sweep(8, 64, 0)), Catch::Contains("step (-i)"));
  CHECK_THAT(error_text(factor_sweep(0, 64, 2)), Catch::Contains("cannot start at 0"));
  CHECK_THAT(error_text(step_sweep(0, 8 * kG, 1)), Catch::Contains("more than"));
}

TEST_CASE("the sweep length cap is exact") {
  CHECK(size_sweep(step_sweep(1, kMaxSweepSizes, 1)).size() == kMaxSweepSizes);
  CHECK_THROWS_AS(size_sweep(step_sweep(1, kMaxSweepSizes + 1, 1)), chorus::Error);
}

}  // namespace test_sizes
