// Binomial-tree broadcast and reduce: the tree arithmetic, ceil(log2 n) depth, and the schedules
// for every root.
#include <chorus/algo/binomial.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

namespace test_binomial {

using namespace chorus::algo;
using namespace chorus::algo::testing;

static_assert(binomial_parent(0) == -1 && binomial_parent(5) == 1 && binomial_parent(4) == 0);
static_assert(binomial_first_child_distance(0) == 1 && binomial_first_child_distance(3) == 4);

TEST_CASE("binomial trees are trees of depth ceil(log2 n)") {
  for (int n = 1; n <= 100; ++n) {
    int bits = 0;
    while ((1 << bits) < n) ++bits;
    int edges = 0;
    for (int v = 0; v < n; ++v) {
      for (const int child : binomial_children(v, n)) {
        CHECK(child < n);
        CHECK(binomial_parent(child) == v);
        ++edges;
      }
      int depth = 0;
      for (int u = v; u != 0; u = binomial_parent(u)) ++depth;
      CHECK(depth <= bits);
    }
    CHECK(edges == n - 1);
    CHECK(static_cast<int>(binomial_children(0, n).size()) == bits);  // the root feeds one per round
  }
}

TEST_CASE("binomial broadcast and reduce are correct for every root") {
  for (int n = 1; n <= 12; ++n) {
    for (int root = 0; root < n; ++root) {
      for (const bool in_place : {false, true}) {
        Options options;
        options.in_place = in_place;
        options.slice = 4;
        const Schedule broadcast = binomial_broadcast(n, 9, root, options);
        const Schedule reduce = binomial_reduce(n, 9, root, options);
        INFO("n " << n << " root " << root);
        CHECK(count_recvs(broadcast.steps[root]) == 0);
        CHECK(count_ops(reduce.steps[root], Op::send) == 0);
        CHECK(elements_sent(broadcast) == static_cast<std::size_t>(n - 1) * 9);
        CHECK(elements_sent(reduce) == static_cast<std::size_t>(n - 1) * 9);
        check_verified(broadcast);
        check_verified(reduce);
      }
    }
  }
}

TEST_CASE("binomial generators reject a root outside the ranks") {
  CHECK_THROWS_AS(binomial_broadcast(3, 1, 3), chorus::Error);
  CHECK_THROWS_AS(binomial_reduce(0, 1, 0), chorus::Error);
}

}  // namespace test_binomial
