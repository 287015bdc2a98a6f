#include <catch2/catch.hpp>

#include <chorus/algo/tree.hpp>
#include <chorus/topo/double_tree.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "fixtures.hpp"

namespace test_double_tree {

using namespace chorus::topo;

namespace {
// Every GPU reaches the root by parent links within n steps (no cycles, one tree).
bool is_tree(const Tree& tree) {
  const int n = static_cast<int>(tree.parent.size());
  for (int g = 0; g < n; ++g) {
    int at = g;
    for (int steps = 0; at != tree.root; ++steps) {
      if (at < 0 || steps > n) return false;
      at = tree.parent[at];
    }
  }
  return true;
}
}  // namespace

TEST_CASE("double binary trees over a ring order", "[topo][tree]") {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 13, 16}) {
    INFO(n << " GPUs");
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::reverse(order.begin() + 1, order.end());  // a ring that is not the identity
    const auto trees = double_binary_tree(order);
    std::vector<int> interior(static_cast<std::size_t>(n), 0);
    for (int t = 0; t < 2; ++t) {
      const Tree& tree = trees[t];
      CHECK(tree.parent[tree.root] == -1);
      CHECK(is_tree(tree));
      int edges = 0;
      for (int g = 0; g < n; ++g) {
        CHECK(tree.children[g].size() <= 2);
        for (int child : tree.children[g]) CHECK(tree.parent[child] == g);
        edges += tree.parent[g] >= 0;
        interior[g] += !tree.children[g].empty() ? 1 : 0;
      }
      CHECK(edges == n - 1);
      // Position p of the ring plays position p of algo's tree: same shape, relabelled.
      for (int p = 0; p < n; ++p) {
        const int up = chorus::algo::tree_parent(t, p, n);
        CHECK(tree.parent[order[p]] == (up < 0 ? -1 : order[up]));
      }
    }
    // With an even count no GPU forwards in both trees.
    if (n % 2 == 0) {
      for (int g = 0; g < n; ++g) CHECK(interior[g] <= 1);
    }
  }
  const auto none = double_binary_tree({});
  CHECK(none[0].root == -1);
  CHECK(none[0].parent.empty());
}

TEST_CASE("trees on the best ring of a real machine", "[topo][tree]") {
  const Topology topo = fixtures::load("dgx1-v100.xml");
  const PathMatrix paths(topo);
  const auto trees = double_binary_tree(best_ring_order(topo));
  CHECK(trees[0].root == 0);
  for (const Tree& tree : trees) {
    CHECK(is_tree(tree));
    CHECK(tree_bottleneck(paths, tree) >= 20.0);  // every tree edge is NVLink or NVB, never SYS
  }
  CHECK(tree_bottleneck(paths, double_binary_tree({0})[0]) == kLocalGBps);
}

}  // namespace test_double_tree
