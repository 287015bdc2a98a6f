// The schedule replay against the closed forms of the alpha-beta model on a uniform fabric.
#include <catch2/catch.hpp>

#include <chorus/algo/build.hpp>
#include <chorus/model/fabric.hpp>
#include <chorus/model/simulate.hpp>

#include <cstddef>

namespace test_simulate {

using namespace chorus;
using chorus::model::simulate_us;
using chorus::model::uniform_fabric;

namespace {
constexpr double kAlpha = 3.0;  // us
constexpr double kBeta = 2.0;   // GB/s: 2000 bytes per us
double us(std::size_t bytes) { return static_cast<double>(bytes) / (kBeta * 1e3); }
algo::Schedule build(Collective c, algo::Pattern p, int n, std::size_t count, std::size_t slice = 0) {
  algo::Options options;
  options.slice = slice;
  return algo::build(c, p, n, count, 0, options);
}
}  // namespace

TEST_CASE("ring all_reduce costs 2(n-1) steps of alpha + S/(n beta)") {
  for (int n : {2, 3, 5, 8}) {
    const std::size_t count = 1000 * static_cast<std::size_t>(n);  // divisible: every chunk is 1000 floats
    const double t = simulate_us(build(Collective::all_reduce, algo::Pattern::ring, n, count), uniform_fabric(n, kAlpha, kBeta), 4);
    const double expected = 2.0 * (n - 1) * (kAlpha + us(4000));
    INFO("n = " << n);
    // An out-of-place ring may also copy the rank's own chunk locally: at most one chunk more.
    CHECK(t >= expected - 1e-9);
    CHECK(t <= expected + us(4 * count) + 1e-9);
  }
}

TEST_CASE("ring all_gather and reduce_scatter cost n-1 steps") {
  const int n = 6;
  const std::size_t per_rank = 500;
  const auto fabric = uniform_fabric(n, kAlpha, kBeta);
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter}) {
    const double t = simulate_us(build(c, algo::Pattern::ring, n, per_rank), fabric, 8);
    const double steps = (n - 1) * (kAlpha + us(8 * per_rank));
    INFO(to_string(c));
    CHECK(t >= steps - 1e-9);
    CHECK(t <= steps + 2 * us(8 * per_rank) + 1e-9);  // local copies of the rank's own block
  }
}

TEST_CASE("a receiver takes its messages one at a time: one_shot pays (n-1) full buffers") {
  // Every rank reads the whole buffer from each of its n-1 peers over its own memory port.
  for (int n : {2, 4, 7}) {
    const std::size_t count = 4096;
    const double t = simulate_us(build(Collective::all_reduce, algo::Pattern::one_shot, n, count),
                                 uniform_fabric(n, kAlpha, kBeta), 4);
    const double expected = (n - 1) * (kAlpha + us(4 * count));
    INFO("n = " << n);
    CHECK(t >= expected - 1e-9);
    CHECK(t <= expected + 2 * us(4 * count) + 1e-9);
  }
}

TEST_CASE("pipelining a chain broadcast hides all but one slice per hop") {
  const int n = 5;
  const std::size_t count = 1 << 16;
  auto fabric = uniform_fabric(n, 0.0, kBeta);  // bandwidth only
  fabric.local_GBps = 0.0;                      // the root's own copy is free here
  const double whole = simulate_us(build(Collective::broadcast, algo::Pattern::chain, n, count), fabric, 4);
  const double sliced = simulate_us(build(Collective::broadcast, algo::Pattern::chain, n, count, count / 16), fabric, 4);
  CHECK(whole == Approx((n - 1) * us(4 * count)));
  // 16 slices through 4 hops: (16 + 4 - 1) slice times.
  CHECK(sliced == Approx((16 + n - 2) * us(4 * count / 16)));
}

TEST_CASE("one rank and zero elements cost only latency") {
  CHECK(simulate_us(build(Collective::all_reduce, algo::Pattern::ring, 1, 100), uniform_fabric(1, kAlpha, kBeta), 4) <=
        us(400) + 1e-9);
  const double empty = simulate_us(build(Collective::all_reduce, algo::Pattern::ring, 4, 0), uniform_fabric(4, kAlpha, kBeta), 4);
  CHECK(empty == Approx(2 * 3 * kAlpha));
}

TEST_CASE("simulate_us refuses a schedule for another rank count or a zero element size") {
  const auto schedule = build(Collective::all_reduce, algo::Pattern::ring, 4, 16);
  CHECK_THROWS_AS(simulate_us(schedule, uniform_fabric(3, kAlpha, kBeta), 4), chorus::Error);
  CHECK_THROWS_WITH(simulate_us(schedule, uniform_fabric(4, kAlpha, kBeta), 0), Catch::Contains("element size"));
  CHECK_THROWS_WITH(uniform_fabric(0, kAlpha, kBeta), Catch::Contains("ranks must be at least 1, got 0"));
  CHECK_THROWS_AS(uniform_fabric(2, -1.0, kBeta), chorus::Error);
  CHECK_THROWS_AS(uniform_fabric(2, kAlpha, 0.0), chorus::Error);
}

}  // namespace test_simulate
