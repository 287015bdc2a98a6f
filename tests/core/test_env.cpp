#include <catch2/catch.hpp>

#include <chorus/core/env.hpp>

#include <chrono>
#include <cstdlib>
#include <string>

namespace test_env {

TEST_CASE("CHORUS_TIMEOUT_MS parses positive integers and rejects the rest", "[env]") {
  ::unsetenv("CHORUS_TIMEOUT_MS");
  CHECK(chorus::env::timeout_ms() == chorus::kDefaultTimeoutMs);
  ::setenv("CHORUS_TIMEOUT_MS", "250", 1);
  CHECK(chorus::env::timeout_ms() == 250);
  for (const char* bad : {"0", "-5", "12ms", "abc", "99999999999999999999999"}) {
    ::setenv("CHORUS_TIMEOUT_MS", bad, 1);
    INFO("value " << bad);
    CHECK_THROWS_WITH(chorus::env::timeout_ms(), Catch::Contains("CHORUS_TIMEOUT_MS") && Catch::Contains(bad));
  }
  ::unsetenv("CHORUS_TIMEOUT_MS");
}

// A value strtol accepts but a nanosecond deadline cannot hold used to wrap into the past: every wait timed out
// at once. Too large is as malformed as not a number.
TEST_CASE("CHORUS_TIMEOUT_MS above kMaxTimeoutMs is rejected, not overflowed", "[env]") {
  const std::string max = std::to_string(chorus::env::kMaxTimeoutMs);
  ::setenv("CHORUS_TIMEOUT_MS", max.c_str(), 1);
  CHECK(chorus::env::timeout_ms() == chorus::env::kMaxTimeoutMs);
  const std::string above = std::to_string(chorus::env::kMaxTimeoutMs + 1);
  for (const char* bad : {above.c_str(), "9300000000000", "9223372036854775807"}) {
    ::setenv("CHORUS_TIMEOUT_MS", bad, 1);
    INFO("value " << bad);
    CHECK_THROWS_WITH(chorus::env::timeout_ms(),
                      Catch::Contains("CHORUS_TIMEOUT_MS") && Catch::Contains(bad) && Catch::Contains(max));
    CHECK_THROWS_AS(chorus::env::timeout_ms(), chorus::Error);
  }
  ::unsetenv("CHORUS_TIMEOUT_MS");
}

TEST_CASE("twice the largest timeout is a deadline in the future", "[env]") {
  using Clock = std::chrono::steady_clock;
  const auto twice = std::chrono::milliseconds(2 * chorus::env::kMaxTimeoutMs);
  // Leave room for now() itself, which counts from an unspecified epoch (boot, on Linux).
  CHECK(twice.count() < std::chrono::duration_cast<std::chrono::milliseconds>(Clock::duration::max()).count() / 1000);
  const Clock::time_point now = Clock::now();
  CHECK(now + twice > now);
  CHECK(chorus::env::kMaxTimeoutMs >= 24L * 60 * 60 * 1000);  // generous: at least a day
}

TEST_CASE("CHORUS_LOG accepts the four levels only", "[env]") {
  ::setenv("CHORUS_LOG", "debug", 1);
  CHECK(chorus::env::log_level() == chorus::LogLevel::debug);
  ::setenv("CHORUS_LOG", "none", 1);
  CHECK(chorus::env::log_level() == chorus::LogLevel::none);
  ::setenv("CHORUS_LOG", "verbose", 1);
  CHECK_THROWS_AS(chorus::env::log_level(), chorus::Error);
  ::unsetenv("CHORUS_LOG");
  CHECK(chorus::env::log_level() == chorus::LogLevel::warn);
}

}  // namespace test_env
