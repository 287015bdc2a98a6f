// Rabenseifner's all_reduce: the non-power-of-two fold-in, log2(p) exchanges each way, the
// ring's traffic on powers of two, and correctness with the verifier.
#include <chorus/algo/halving_doubling.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

namespace test_halving_doubling {

namespace {

using namespace chorus::algo;
using namespace chorus::algo::testing;

static_assert(floor_power_of_two(1) == 1 && floor_power_of_two(6) == 4 && floor_power_of_two(8) == 8);

int log2_of(int p) {
  int bits = 0;
  while ((1 << bits) < p) ++bits;
  return bits;
}

}  // namespace

TEST_CASE("virtual ranks number the p participants and skip the folded even ranks") {
  for (int n = 1; n <= 40; ++n) {
    const int p = floor_power_of_two(n);
    const int extra = n - p;
    CHECK(p <= n);
    CHECK(n < 2 * p);
    int participants = 0;
    for (int rank = 0; rank < n; ++rank) {
      const int v = hd_virtual_rank(rank, extra);
      if (v < 0) {
        CHECK(rank < 2 * extra);
        CHECK(rank % 2 == 0);
        continue;
      }
      ++participants;
      CHECK(v < p);
      CHECK(hd_real_rank(v, extra) == rank);
    }
    CHECK(participants == p);
  }
}

TEST_CASE("halving_doubling exchanges log2(p) times each way, plus the fold for extra ranks") {
  for (int n = 1; n <= 20; ++n) {
    const int p = floor_power_of_two(n);
    const int extra = n - p;
    const Schedule schedule = halving_doubling_all_reduce(n, 37);
    INFO("n " << n);
    for (int rank = 0; rank < n; ++rank) {
      const int v = hd_virtual_rank(rank, extra);
      const int expected = v < 0 ? 1 : 2 * log2_of(p) + (rank < 2 * extra ? 1 : 0);
      CHECK(count_ops(schedule.steps[rank], Op::send) == expected);
      CHECK(count_recvs(schedule.steps[rank]) == expected);
    }
    check_verified(schedule);
  }
}

TEST_CASE("on a power of two halving_doubling moves as much as the ring") {
  for (const int n : {2, 4, 8, 16, 32}) {
    const std::size_t count = 64;
    const Schedule schedule = halving_doubling_all_reduce(n, count);
    CHECK(elements_sent(schedule) == 2 * static_cast<std::size_t>(n - 1) * count);
  }
}

TEST_CASE("halving_doubling is correct in place, sliced and for awkward counts") {
  for (int n = 1; n <= 24; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{31}}) {
      for (const bool in_place : {false, true}) {
        for (const std::size_t slice : {std::size_t{0}, std::size_t{2}}) {
          Options options;
          options.in_place = in_place;
          options.slice = slice;
          const Schedule schedule = halving_doubling_all_reduce(n, count, options);
          CHECK(schedule.scratch_count == 0);
          check_verified(schedule);
        }
      }
    }
  }
}

TEST_CASE("halving_doubling rejects bad rank counts") {
  CHECK_THROWS_AS(halving_doubling_all_reduce(0, 8), chorus::Error);
}

}  // namespace test_halving_doubling
