#include <catch2/catch.hpp>

#include <chorus/core/error.hpp>

#include <string>

namespace test_error {

TEST_CASE("make_error names the call, the rank and the value", "[error]") {
  const chorus::Error error =
      chorus::make_error(chorus::ErrorCode::invalid_argument, "all_reduce", 3, "root ", 9, " is out of range");
  CHECK(error.code() == chorus::ErrorCode::invalid_argument);
  CHECK(std::string(error.what()) == "chorus::all_reduce on rank 3: root 9 is out of range");
  const std::exception& base = error;  // catchable as std::exception
  CHECK(std::string(base.what()).find("rank 3") != std::string::npos);
}

TEST_CASE("every error code has a name", "[error]") {
  using chorus::ErrorCode;
  for (ErrorCode code : {ErrorCode::invalid_argument, ErrorCode::mismatch, ErrorCode::peer_failed, ErrorCode::timeout,
                         ErrorCode::unsupported, ErrorCode::internal}) {
    CHECK(std::string(chorus::to_string(code)) != "unknown error");
  }
}

}  // namespace test_error
