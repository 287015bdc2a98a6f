// Double binary trees laid over a ring: position p of the ring order plays position p of NCCL's
// tree pair (algo::tree_parent, the same construction the tree all_reduce schedule uses), so tree
// edges join GPUs that are close on the best ring. Tree 1 mirrors tree 0 (or shifts it by one
// for an odd count), so a GPU with children in one tree is (almost always) a leaf in the other.
#pragma once

#include <array>
#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"
#include "path.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct Tree {
  int root = -1;                             // a GPU index
  std::vector<int> parent;                   // parent[gpu]; -1 for the root
  std::vector<std::vector<int>> children;    // children[gpu], in increasing tree position
};

CHORUS_FUNC std::array<Tree, 2> double_binary_tree(const std::vector<int>& ring_order);

// The narrowest parent-child path of a tree (kLocalGBps for a single GPU).
CHORUS_FUNC double tree_bottleneck(const PathMatrix& paths, const Tree& tree);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "double_tree_inl.hpp"
#endif
