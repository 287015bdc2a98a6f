// The double binary tree: both trees are trees (one root, parents and children agree, every rank
// reachable, logarithmic depth), a rank has children in at most one of them, and the all_reduce
// schedule moves each half up and down its tree once.
#include <chorus/algo/tree.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

namespace test_tree {

namespace {

using namespace chorus::algo;
using namespace chorus::algo::testing;

static_assert(btree_parent(1, 8) == 2 && btree_parent(4, 8) == 0 && btree_parent(6, 8) == 4);
static_assert(btree_child(0, 8, 0) == 4 && btree_child(4, 8, 1) == 6 && btree_child(5, 8, 0) == -1);
static_assert(tree_root(0, 8) == 0 && tree_root(1, 8) == 7 && tree_root(1, 7) == 1);

int children_of(int tree, int rank, int n) {
  return (tree_child(tree, rank, n, 0) >= 0 ? 1 : 0) + (tree_child(tree, rank, n, 1) >= 0 ? 1 : 0);
}

int ceil_log2(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}

}  // namespace

TEST_CASE("both trees are rooted trees whose parent and child links agree") {
  for (int n = 1; n <= 130; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      INFO("n " << n << " tree " << tree);
      int roots = 0;
      int edges = 0;
      for (int rank = 0; rank < n; ++rank) {
        CHECK(tree_rank(tree, tree_position(tree, rank, n), n) == rank);
        const int parent = tree_parent(tree, rank, n);
        if (parent < 0) {
          ++roots;
          CHECK(rank == tree_root(tree, n));
        } else {
          REQUIRE(parent < n);
          CHECK((tree_child(tree, parent, n, 0) == rank || tree_child(tree, parent, n, 1) == rank));
        }
        for (int which = 0; which < 2; ++which) {
          const int child = tree_child(tree, rank, n, which);
          if (child < 0) continue;
          REQUIRE(child < n);
          CHECK(tree_parent(tree, child, n) == rank);
          ++edges;
        }
        // Depth is finite (the walk reaches the root) and logarithmic.
        CHECK(tree_depth(tree, rank, n) <= ceil_log2(n));
      }
      CHECK(roots == 1);
      CHECK(edges == n - 1);
    }
  }
}

TEST_CASE("a rank has children in at most one tree, so it forwards at most two halves") {
  for (int n = 1; n <= 130; ++n) {
    for (int rank = 0; rank < n; ++rank) {
      INFO("n " << n << " rank " << rank);
      const int in_tree0 = children_of(0, rank, n);
      const int in_tree1 = children_of(1, rank, n);
      CHECK(in_tree0 + in_tree1 <= 2);
      // The one exception, for odd n: rank 0 roots tree 0 with a single child and is the
      // single-child parent of rank 1 in tree 1 (NCCL's shift has the same property).
      if (in_tree0 > 0 && in_tree1 > 0) {
        CHECK(n % 2 == 1);
        CHECK(rank == 0);
      }
    }
  }
}

TEST_CASE("tree 1 mirrors tree 0 for even n and shifts it for odd n") {
  for (int n = 2; n <= 20; ++n) {
    for (int rank = 0; rank < n; ++rank) {
      const int image = n % 2 == 0 ? n - 1 - rank : (rank + 1) % n;
      const int parent0 = tree_parent(0, rank, n);
      const int expected = parent0 < 0 ? -1 : (n % 2 == 0 ? n - 1 - parent0 : (parent0 + 1) % n);
      CHECK(tree_parent(1, image, n) == expected);
    }
  }
}

TEST_CASE("tree all_reduce sends each half up and down its tree once") {
  for (int n = 1; n <= 17; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{9}, std::size_t{64}}) {
      for (const std::size_t slice : {std::size_t{0}, std::size_t{3}}) {
        for (const bool in_place : {false, true}) {
          Options options;
          options.slice = slice;
          options.in_place = in_place;
          const Schedule schedule = tree_all_reduce(n, count, options);
          INFO("n " << n << " count " << count << " slice " << slice);
          const int slices = static_cast<int>(slice_count(chunk_range(count, 2, 0).count, slice));
          for (int rank = 0; rank < n && n > 1; ++rank) {
            int links = 0;  // tree edges at this rank, both trees
            for (int tree = 0; tree < 2; ++tree) {
              links += children_of(tree, rank, n) + (tree_parent(tree, rank, n) >= 0 ? 1 : 0);
            }
            CHECK(count_ops(schedule.steps[rank], Op::send) == links * slices);
            CHECK(count_recvs(schedule.steps[rank]) == links * slices);
          }
          // n-1 edges per tree, each crossed up and down by that tree's half.
          CHECK(elements_sent(schedule) == 2 * static_cast<std::size_t>(n - 1) * count);
          CHECK(schedule.scratch_count == 0);
          check_verified(schedule);
        }
      }
    }
  }
}

TEST_CASE("tree all_reduce rejects bad rank counts") {
  CHECK_THROWS_AS(tree_all_reduce(0, 8), chorus::Error);
}

}  // namespace test_tree
