// Pairwise all_to_all: in each step ranks swap in disjoint pairs, over n steps every pair meets
// once, and in place the outgoing block is staged so no swap overwrites what it still sends.
#include <chorus/algo/pairwise.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

namespace test_pairwise {

using namespace chorus::algo;
using namespace chorus::algo::testing;

static_assert(pairwise_partner(1, 3, 4) == 2 && pairwise_partner(2, 3, 4) == 1);

TEST_CASE("pairwise partners are symmetric and every pair meets exactly once") {
  for (int n = 1; n <= 33; ++n) {
    std::vector<int> met(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
    for (int step = 0; step < n; ++step) {
      for (int rank = 0; rank < n; ++rank) {
        const int partner = pairwise_partner(rank, step, n);
        CHECK(pairwise_partner(partner, step, n) == rank);
        ++met[static_cast<std::size_t>(rank) * static_cast<std::size_t>(n) + static_cast<std::size_t>(partner)];
      }
    }
    for (const int times : met) CHECK(times == 1);
  }
}

TEST_CASE("pairwise all_to_all sends n-1 blocks per rank, in place through scratch") {
  for (int n = 1; n <= 12; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{4}}) {
      for (const bool in_place : {false, true}) {
        Options options;
        options.in_place = in_place;
        const Schedule schedule = pairwise_all_to_all(n, count, options);
        INFO("n " << n << " count " << count << " in place " << in_place);
        for (int rank = 0; rank < n; ++rank) {
          CHECK(count_ops(schedule.steps[rank], Op::send) == n - 1);
          CHECK(count_ops(schedule.steps[rank], Op::recv_copy) == n - 1);
          for (const Step& step : schedule.steps[rank]) {
            if (step.op == Op::send) CHECK(step.src.buffer == (in_place ? Buffer::scratch : Buffer::input));
          }
        }
        CHECK(schedule.scratch_count == (in_place && n > 1 ? 2 * count : 0));
        CHECK(elements_sent(schedule) == static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) * count);
        check_verified(schedule);
      }
    }
  }
}

}  // namespace test_pairwise
