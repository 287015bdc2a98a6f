// The verifier's values (verifier.hpp): hash-consed expressions over the inputs. Each input element is a
// leaf (rank, index); a reduction builds combine(left, right); two ranks hold the same id exactly when they
// computed the same value in the same order. Part of the verifier's bodies (verifier_inl.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::verify_detail {

using chorus::detail::concat;


// Bounds that keep a malformed schedule from exhausting memory: beyond them we refuse to verify.
constexpr int kMaxRanks = 1024;
constexpr std::size_t kMaxElements = std::size_t{1} << 26;  // all ranks' buffers together
constexpr std::size_t kMaxExpressions = std::size_t{1} << 24;
constexpr std::uint32_t kRenderLeaves = 8;  // larger expressions are summarised in messages

using Expr = std::uint32_t;
constexpr Expr kUndefined = 0;

// Ids 1..ranks*per_rank are the leaves (rank p, input index j), in that order; every later id
// is combine(left, right) of two smaller ids, so children always precede parents.
class Expressions {
 public:
  Expressions(int ranks, std::size_t per_rank)
      : per_rank_(per_rank), first_node_(static_cast<std::size_t>(ranks) * per_rank + 1) {}

  Expr leaf(int rank, std::size_t index) const {
    return static_cast<Expr>(1 + static_cast<std::size_t>(rank) * per_rank_ + index);
  }
  bool is_leaf(Expr e) const { return e != kUndefined && e < first_node_; }
  int leaf_rank(Expr e) const { return static_cast<int>((e - 1) / per_rank_); }
  std::size_t leaf_index(Expr e) const { return (e - 1) % per_rank_; }
  std::pair<Expr, Expr> operands(Expr e) const { return nodes_[e - first_node_]; }

  // The id of combine(left, right); kUndefined when the expression budget is spent.
  Expr combine(Expr left, Expr right) {
    if (2 * (nodes_.size() + 1) > slots_.size()) grow();
    const std::pair<Expr, Expr> key(left, right);
    for (std::size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const Expr id = slots_[slot];
      if (id == kUndefined) {
        if (nodes_.size() >= kMaxExpressions) return kUndefined;
        nodes_.push_back(key);
        return slots_[slot] = static_cast<Expr>(first_node_ + nodes_.size() - 1);
      }
      if (nodes_[id - first_node_] == key) return id;
    }
  }

  // Leaves under each combined expression, repeats counted, saturating at cap. One forward pass
  // suffices because children precede parents; no recursion, so deep expressions are fine.
  void count_leaves(std::uint32_t cap) {
    cap_ = cap;
    leaves_.assign(nodes_.size(), 0);
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      leaves_[k] = std::min(cap, leaf_count(nodes_[k].first) + leaf_count(nodes_[k].second));
    }
  }
  // Valid after count_leaves().
  std::uint32_t leaf_count(Expr e) const { return is_leaf(e) ? 1 : leaves_[e - first_node_]; }
  std::uint32_t cap() const { return cap_; }

  // The leaves of e in left-to-right order; call only when leaf_count(e) < cap().
  std::vector<Expr> leaves_of(Expr e) const {
    std::vector<Expr> leaves;
    std::vector<Expr> stack{e};
    while (!stack.empty()) {
      const Expr x = stack.back();
      stack.pop_back();
      if (is_leaf(x)) {
        leaves.push_back(x);
      } else {
        stack.push_back(operands(x).second);
        stack.push_back(operands(x).first);
      }
    }
    return leaves;
  }

  std::string leaf_text(Expr e) const { return concat("r", leaf_rank(e), ".in[", leaf_index(e), "]"); }

  // "((r0.in[1] + r1.in[1]) + r2.in[1])"; valid after count_leaves().
  std::string render(Expr e) const {
    if (e == kUndefined) return "no data (never written)";
    if (is_leaf(e)) return leaf_text(e);
    const std::uint32_t leaves = leaf_count(e);
    if (leaves >= cap_) return concat("a combination of ", cap_, " or more contributions");
    if (leaves > kRenderLeaves) return concat("a combination of ", leaves, " contributions");
    return concat("(", render(operands(e).first), " + ", render(operands(e).second), ")");
  }

 private:
  static std::size_t hash(std::pair<Expr, Expr> key) {
    std::uint64_t x = (std::uint64_t{key.first} << 32) | key.second;  // a 64-bit finaliser mix
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
  }

  void grow() {
    std::vector<Expr> slots(std::max<std::size_t>(1024, 2 * slots_.size()), kUndefined);
    mask_ = slots.size() - 1;
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      std::size_t slot = hash(nodes_[k]) & mask_;
      while (slots[slot] != kUndefined) slot = (slot + 1) & mask_;
      slots[slot] = static_cast<Expr>(first_node_ + k);
    }
    slots_.swap(slots);
  }

  std::size_t per_rank_;
  std::size_t first_node_;
  std::vector<std::pair<Expr, Expr>> nodes_;
  // The hash-consing index: open addressing over ids (0 = empty slot), kept at most half full.
  // Its keys live in nodes_, so a slot costs 4 bytes and nothing is allocated per expression.
  std::vector<Expr> slots_;
  std::size_t mask_ = 0;
  std::vector<std::uint32_t> leaves_;
  std::uint32_t cap_ = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::verify_detail
