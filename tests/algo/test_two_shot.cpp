// Two-shot all_reduce: each chunk is reduced once by its owner, then everyone reads it; two
// rounds of messages and the ring's traffic.
#include <chorus/algo/two_shot.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

namespace test_two_shot {

using namespace chorus::algo;
using namespace chorus::algo::testing;

TEST_CASE("two_shot moves the ring's volume in two rounds of n-1 messages") {
  for (int n = 1; n <= 12; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{40}}) {
      const Schedule schedule = two_shot_all_reduce(n, count);
      INFO("n " << n << " count " << count);
      for (int rank = 0; rank < n; ++rank) {
        CHECK(count_ops(schedule.steps[rank], Op::send) == 2 * (n - 1));
        CHECK(count_recvs(schedule.steps[rank]) == 2 * (n - 1));
        // n contributions take n-1 combines, whether received or local.
        CHECK(count_ops(schedule.steps[rank], Op::recv_reduce) + count_ops(schedule.steps[rank], Op::reduce) == n - 1);
      }
      CHECK(elements_sent(schedule) == 2 * static_cast<std::size_t>(n - 1) * count);
      check_verified(schedule);
    }
  }
}

TEST_CASE("two_shot in place keeps the owner's contribution in scratch") {
  for (int n = 1; n <= 12; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{29}}) {
      for (const std::size_t slice : {std::size_t{0}, std::size_t{2}}) {
        Options options;
        options.in_place = true;
        options.slice = slice;
        const Schedule schedule = two_shot_all_reduce(n, count, options);
        CHECK(schedule.scratch_count <= count / static_cast<std::size_t>(n) + 1);
        check_verified(schedule);
      }
    }
  }
}

}  // namespace test_two_shot
