// Double binary trees laid over a ring: position p of the ring order plays position p of NCCL's
// tree pair (algo::tree_parent, the same construction the tree all_reduce schedule uses), so tree
// edges join GPUs that are close on the best ring. Tree 1 mirrors tree 0 (or shifts it by one
// for an odd count), so a GPU with children in one tree is (almost always) a leaf in the other.
#pragma once

#include <algorithm>
#include <array>
#include <vector>

#include "../algo/tree.hpp"
#include "bandwidth.hpp"
#include "path.hpp"

namespace chorus::topo {

struct Tree {
  int root = -1;                             // a GPU index
  std::vector<int> parent;                   // parent[gpu]; -1 for the root
  std::vector<std::vector<int>> children;    // children[gpu], in increasing tree position
};

inline std::array<Tree, 2> double_binary_tree(const std::vector<int>& ring_order) {
  const int n = static_cast<int>(ring_order.size());
  std::array<Tree, 2> trees;
  for (int t = 0; t < 2; ++t) {
    Tree& tree = trees[t];
    tree.parent.assign(static_cast<std::size_t>(n), -1);
    tree.children.assign(static_cast<std::size_t>(n), {});
    if (n == 0) continue;
    tree.root = ring_order[algo::tree_root(t, n)];
    for (int p = 0; p < n; ++p) {
      const int up = algo::tree_parent(t, p, n);
      if (up < 0) continue;
      tree.parent[ring_order[p]] = ring_order[up];
      tree.children[ring_order[up]].push_back(ring_order[p]);
    }
  }
  return trees;
}

// The narrowest parent-child path of a tree (kLocalGBps for a single GPU).
inline double tree_bottleneck(const PathMatrix& paths, const Tree& tree) {
  double weakest = kLocalGBps;
  for (int g = 0; g < static_cast<int>(tree.parent.size()); ++g) {
    if (tree.parent[g] >= 0) weakest = std::min(weakest, paths.gpu(g, tree.parent[g]).bw_GBps);
  }
  return weakest;
}

}  // namespace chorus::topo
