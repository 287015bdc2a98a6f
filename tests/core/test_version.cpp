// The headers' version (core/config.hpp) is the project's (meson.build), passed in as CHORUS_PROJECT_VERSION,
// and the integer and string forms say the same thing.
#include <catch2/catch.hpp>

#include <chorus/core/config.hpp>

#include <string>

namespace test_version {

TEST_CASE("The headers' version is meson.build's, as an integer and as a string") {
  CHECK(std::string(CHORUS_VERSION_STRING) == CHORUS_PROJECT_VERSION);
  CHECK(CHORUS_VERSION == CHORUS_VERSION_MAJOR * 10000 + CHORUS_VERSION_MINOR * 100 + CHORUS_VERSION_PATCH);
  CHECK(std::to_string(CHORUS_VERSION_MAJOR) + "." + std::to_string(CHORUS_VERSION_MINOR) + "." +
            std::to_string(CHORUS_VERSION_PATCH) == CHORUS_VERSION_STRING);
  // Usable in the preprocessor, as version checks are written.
#if CHORUS_VERSION < 100
  FAIL("CHORUS_VERSION is below 0.1.0");
#endif
  static_assert(CHORUS_VERSION_MINOR < 100 && CHORUS_VERSION_PATCH < 100, "two decimal digits each");
}

}  // namespace test_version
