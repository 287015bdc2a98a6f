#include <catch2/catch.hpp>

#include <chorus/core/env.hpp>

#include <cstdlib>

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
