// Direct reduce_scatter and all_gather: one round, every pair of ranks exchanges one block.
#include <chorus/algo/direct.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

namespace test_direct {

using namespace chorus::algo;
using namespace chorus::algo::testing;

TEST_CASE("direct reduce_scatter and all_gather exchange one block with every peer") {
  for (int n = 1; n <= 12; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{6}}) {
      for (const bool in_place : {false, true}) {
        Options options;
        options.in_place = in_place;
        const Schedule scatter = direct_reduce_scatter(n, count, options);
        const Schedule gather = direct_all_gather(n, count, options);
        INFO("n " << n << " count " << count << " in place " << in_place);
        for (int rank = 0; rank < n; ++rank) {
          CHECK(count_ops(scatter.steps[rank], Op::send) == n - 1);
          CHECK(count_recvs(scatter.steps[rank]) == n - 1);
          CHECK(count_ops(gather.steps[rank], Op::send) == n - 1);
          CHECK(count_ops(gather.steps[rank], Op::recv_copy) == n - 1);
        }
        const auto volume = static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) * count;
        CHECK(elements_sent(scatter) == volume);
        CHECK(elements_sent(gather) == volume);
        CHECK(scatter.scratch_count == (in_place && n > 1 ? count : 0));
        CHECK(gather.scratch_count == 0);
        check_verified(scatter);
        check_verified(gather);
      }
    }
  }
}

TEST_CASE("direct generators are correct with slices") {
  Options options;
  options.slice = 2;
  for (const bool in_place : {false, true}) {
    options.in_place = in_place;
    check_verified(direct_reduce_scatter(7, 9, options));
    check_verified(direct_all_gather(7, 9, options));
  }
}

}  // namespace test_direct
