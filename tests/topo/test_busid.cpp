#include <catch2/catch.hpp>

#include <chorus/topo/busid.hpp>

namespace test_busid {

using namespace chorus::topo;

TEST_CASE("bus ids normalise to NCCL's lower-case form", "[topo][busid]") {
  CHECK(normalize_busid("0000:07:00.0") == std::string("0000:07:00.0"));
  CHECK(normalize_busid("0000:0A:1F.7") == std::string("0000:0a:1f.7"));
  CHECK(normalize_busid("00000000:C4:00.0") == std::string("0000:c4:00.0"));  // NVML's 8-digit domain
  CHECK(normalize_busid("1:07:00.0") == std::string("0001:07:00.0"));
  CHECK(normalize_busid("ffff:ff:01.0") == std::string("ffff:ff:01.0"));    // placeholder switches
  CHECK(normalize_busid("10000:07:00.0") == std::string("00010000:07:00.0"));
}

TEST_CASE("things that are not bus ids are rejected", "[topo][busid]") {
  for (const char* bad : {"", "0000:07:00", "0000:07:00.8", "0000:7:00.0", "0000-07-00.0", "g000:07:00.0",
                          "000000000:07:00.0", ":07:00.0", "0000:07:00.0f", "0000:07:0x.0"}) {
    CHECK_FALSE(normalize_busid(bad));
  }
}

}  // namespace test_busid
