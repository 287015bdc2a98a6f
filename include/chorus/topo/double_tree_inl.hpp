// double_tree.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by double_tree.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "../algo/tree.hpp"
#include "../core/config.hpp"
#include "double_tree.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

CHORUS_FUNC std::array<Tree, 2> double_binary_tree(const std::vector<int>& ring_order) {
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

CHORUS_FUNC double tree_bottleneck(const PathMatrix& paths, const Tree& tree) {
  double weakest = kLocalGBps;
  for (int g = 0; g < static_cast<int>(tree.parent.size()); ++g) {
    if (tree.parent[g] >= 0) weakest = std::min(weakest, paths.gpu(g, tree.parent[g]).bw_GBps);
  }
  return weakest;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
