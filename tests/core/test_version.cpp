// The headers' version (core/config.hpp) is the project's (meson.build), passed in as CHORUS_PROJECT_VERSION,
// and the integer and string forms say the same thing.
#include <catch2/catch.hpp>

#include <chorus/core/config.hpp>
#include <chorus/core/reduce_op.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

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

// The ABI tag (docs/abi.md) is the whole version plus the mode, so the two modes never share a symbol.
constexpr std::string_view kTag = CHORUS_ABI_TAG_STRING;
constexpr std::string_view kVersionTag = "v" CHORUS_STRINGIZE(CHORUS_VERSION_MAJOR) "_" CHORUS_STRINGIZE(
    CHORUS_VERSION_MINOR) "_" CHORUS_STRINGIZE(CHORUS_VERSION_PATCH);
#if defined(CHORUS_COMPILED_LIB)
static_assert(kTag.substr(0, kVersionTag.size()) == kVersionTag && kTag.substr(kVersionTag.size()) == "_lib",
              "compiled mode: the version tag plus _lib");
#else
static_assert(kTag == kVersionTag, "header-only: the version tag alone");
#endif

TEST_CASE("chorus names live in the inline namespace named by the ABI tag") {
  // Mangled names carry the tag (what the linker compares); code still writes chorus::ReduceOp.
  std::string mangled = typeid(chorus::ReduceOp).name();
  CHECK(mangled.find(std::to_string(kTag.size()) + std::string(kTag) + "8ReduceOp") != std::string::npos);
  static_assert(std::is_same_v<chorus::ReduceOp, chorus::CHORUS_ABI_TAG::ReduceOp>);
}

}  // namespace test_version
