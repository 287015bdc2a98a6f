// Summary statistics for timing samples.
#include <catch2/catch.hpp>
#include <chorus/bench/stats.hpp>

namespace test_stats {

using namespace chorus::bench;

TEST_CASE("median of odd and even counts") {
  CHECK(median({5.0}) == 5.0);
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({7.0, 7.0, 1.0, 7.0}) == 7.0);
}

TEST_CASE("nearest-rank percentiles are measured values") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  CHECK(percentile(v, 99.0) == 99.0);
  CHECK(percentile(v, 100.0) == 100.0);
  CHECK(percentile(v, 50.0) == 50.0);
  CHECK(percentile(v, 0.0) == 1.0);
  CHECK(percentile({3.0, 9.0}, 99.0) == 9.0);
  CHECK(percentile({3.0, 9.0}, 50.0) == 3.0);
}

TEST_CASE("summarize") {
  const Summary s = summarize({2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0});
  CHECK(s.samples == 8);
  CHECK(s.min == 2.0);
  CHECK(s.max == 9.0);
  CHECK(s.mean == 5.0);
  CHECK(s.median == 4.5);
  CHECK(s.p99 == 9.0);
  CHECK(s.stddev == 2.0);
  CHECK(s.cv == 0.4);
  const Summary zero = summarize({0.0, 0.0});
  CHECK(zero.cv == 0.0);
}

TEST_CASE("bad input throws chorus::Error") {
  CHECK_THROWS_AS(median({}), chorus::Error);
  CHECK_THROWS_AS(mean({}), chorus::Error);
  CHECK_THROWS_AS(summarize({}), chorus::Error);
  CHECK_THROWS_AS(percentile({}, 50.0), chorus::Error);
  CHECK_THROWS_AS(percentile({1.0}, 101.0), chorus::Error);
  CHECK_THROWS_AS(percentile({1.0}, -1.0), chorus::Error);
}

}  // namespace test_stats
