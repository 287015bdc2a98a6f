// One-shot all_reduce: one round of messages, every rank reads the whole buffer from every peer,
// and in place the input is staged so peers never read half-overwritten data.
#include <chorus/algo/one_shot.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

namespace test_one_shot {

using namespace chorus::algo;
using namespace chorus::algo::testing;

TEST_CASE("one_shot sends the whole buffer to every peer and reduces it everywhere") {
  for (int n = 1; n <= 12; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{11}}) {
      const Schedule schedule = one_shot_all_reduce(n, count);
      INFO("n " << n << " count " << count);
      CHECK(schedule.scratch_count == 0);
      for (int rank = 0; rank < n; ++rank) {
        CHECK(count_ops(schedule.steps[rank], Op::send) == n - 1);
        CHECK(count_recvs(schedule.steps[rank]) == n - 1);
      }
      CHECK(elements_sent(schedule) == static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) * count);
      check_verified(schedule);
    }
  }
}

TEST_CASE("one_shot in place reads peers' staged copies, so it is deadlock-free and correct") {
  for (int n = 1; n <= 12; ++n) {
    for (const std::size_t slice : {std::size_t{0}, std::size_t{2}}) {
      Options options;
      options.in_place = true;
      options.slice = slice;
      const Schedule schedule = one_shot_all_reduce(n, 7, options);
      CHECK(schedule.scratch_count == (n > 1 ? 7u : 0u));
      for (int rank = 0; rank < n; ++rank) {
        for (const Step& step : schedule.steps[rank]) {
          if (step.op == Op::send) CHECK(step.src.buffer == Buffer::scratch);
        }
      }
      check_verified(schedule);
    }
  }
}

TEST_CASE("one_shot rejects bad rank counts") {
  CHECK_THROWS_AS(one_shot_all_reduce(0, 1), chorus::Error);
}

}  // namespace test_one_shot
