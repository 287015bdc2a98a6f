#include <catch2/catch.hpp>

#include <chorus/topo/cpuset.hpp>

namespace test_cpuset {

using namespace chorus::topo;

TEST_CASE("CPU lists and masks convert both ways", "[topo][cpuset]") {
  const auto dgx1 = parse_cpulist("0-19,40-59");
  REQUIRE(dgx1);
  CHECK(to_cpumask(*dgx1) == "0fffff00,000fffff");
  CHECK(to_cpulist(*dgx1) == "0-19,40-59");
  const auto back = parse_cpumask("0fffff00,000fffff");
  REQUIRE(back);
  CHECK(*back == *dgx1);
  CHECK(to_cpulist(*parse_cpulist("3")) == "3");
  CHECK(to_cpulist(*parse_cpulist("0,2,4-5")) == "0,2,4-5");
  CHECK(to_cpumask(*parse_cpulist("")) == "00000000");
  CHECK(to_cpumask(*parse_cpulist("32")) == "00000001,00000000");
  CHECK(to_cpulist(*parse_cpumask("ffffffff,ffffffff\n")) == "0-63");
  CHECK(to_cpulist(*parse_cpumask("0")).empty());
}

TEST_CASE("malformed CPU sets are rejected, huge ones too", "[topo][cpuset]") {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1;2", "0-99999999", "1 2"}) CHECK_FALSE(parse_cpulist(bad));
  for (const char* bad : {"", "xyz", "12g4", ","}) CHECK_FALSE(parse_cpumask(bad));
  CHECK_FALSE(parse_cpumask(std::string(10000, 'f')));
}

}  // namespace test_cpuset
