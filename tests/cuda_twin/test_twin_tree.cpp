// The double binary tree all_reduce (kernel/tree.hpp) and the pipelined chain broadcast and reduce
// (kernel/chain.hpp) on the CPU twin, against references computed here in the kernels' documented fold
// orders: every rank must get the reference's exact bits (so all ranks agree bit for bit), for 1-8 ranks
// (odd counts give tree 1 another shape), awkward counts, several types and ops, in place, roots other than
// 0, ring orders other than the identity, counters that continue across calls and the 32-bit wrap, seeded
// skew, and a rank that skips the call.
#include <catch2/catch.hpp>

#include "twin_checks.hpp"

#include <chorus/algo/tree.hpp>

#include <cstdlib>
#include <numeric>
#include <string>

#include "../support/sanitizers.hpp"

namespace test_twin_tree {

using namespace twin_checks;
using chorus::Collective;
using chorus::ErrorCode;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Team;
namespace kernel = chorus::cuda::kernel;
namespace algo = chorus::algo;

namespace {

// 64-byte slots and 2 of them: the larger counts take many FIFO slots and many pipeline rounds.
Options small_options(int blocks, int lanes, std::uint32_t seed = 0, std::vector<int> order = {}) {
  Options options;
  options.blocks = blocks;
  options.threads = lanes;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;
  options.fifo_depth = 2;
  options.delay_seed = seed;
  if (!order.empty()) options.ring_orders = {std::move(order)};
  return options;
}

// Tree: an inner rank folds (child 0's partial, its input, child 1's partial) left to right; the root's
// result (divided for avg) is every rank's. Element i belongs to half chunk_range(count, 2, t) and tree t.
template <class T>
T tree_fold(int tree, int rank, int n, ReduceOp op, const std::vector<std::vector<T>>& in, std::size_t i) {
  const int first = algo::tree_child(tree, rank, n, 0);
  const int second = algo::tree_child(tree, rank, n, 1);
  const T own = in[static_cast<std::size_t>(rank)][i];
  if (first < 0) return own;
  T acc = chorus::combine(op, tree_fold(tree, first, n, op, in, i), own);
  if (second >= 0) acc = chorus::combine(op, acc, tree_fold(tree, second, n, op, in, i));
  return acc;
}

template <class T>
std::vector<T> tree_reference(const std::vector<std::vector<T>>& in, ReduceOp op) {
  const int n = static_cast<int>(in.size());
  const std::size_t count = in[0].size();
  if (n == 1) return in[0];
  const std::size_t second_half = algo::chunk_range(count, 2, 1).offset;
  std::vector<T> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const int tree = i < second_half ? 0 : 1;
    const T value = tree_fold(tree, algo::tree_root(tree, n), n, op, in, i);
    out[i] = op == ReduceOp::avg ? chorus::divide_by(value, n) : value;
  }
  return out;
}

std::vector<int> identity_order(int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}
// A ring order other than the identity: 0, n-1, 1, n-2, ...
std::vector<int> zigzag_order(int n) {
  std::vector<int> order;
  for (int lo = 0, hi = n - 1; lo <= hi; ++lo, --hi) {
    order.push_back(lo);
    if (hi != lo) order.push_back(hi);
  }
  return order;
}

// Floats whose sum depends on the fold order; exact small integers (any order) for the other types and ops.
template <class T>
std::vector<std::vector<T>> inputs_for(int n, std::size_t count, ReduceOp op, std::uint32_t seed) {
  std::vector<std::vector<T>> in;
  constexpr bool floating = std::is_floating_point<T>::value || std::is_same<T, chorus::half>::value ||
                            std::is_same<T, chorus::bfloat16>::value;
  for (int r = 0; r < n; ++r) {
    if (floating && (op == ReduceOp::sum || op == ReduceOp::avg)) {
      in.push_back(order_sensitive<T>(r, count, seed));
    } else {
      in.push_back(harness::inputs<T>(op, r, count, seed));
    }
  }
  return in;
}

// Every rank's buffers, `offset` elements into their vectors (misaligned when 1), output pre-filled with the
// sentinel; in place: the output is the input.
template <class T>
struct Buffers {
  std::vector<std::vector<T>> in, out;
  std::vector<const T*> in_ptr;
  std::vector<T*> out_ptr;
  std::size_t count;

  Buffers(const std::vector<std::vector<T>>& inputs, bool in_place, std::size_t offset) : count(inputs[0].size()) {
    for (const auto& values : inputs) {
      std::vector<T> i(offset, T{});
      i.insert(i.end(), values.begin(), values.end());
      in.push_back(std::move(i));
      out.emplace_back(offset + count, harness::sentinel<T>());
    }
    for (std::size_t r = 0; r < inputs.size(); ++r) {
      in_ptr.push_back(in[r].data() + offset);
      out_ptr.push_back(in_place ? in[r].data() + offset : out[r].data() + offset);
    }
  }
  std::vector<T> result(int rank) const {
    const T* got = out_ptr[static_cast<std::size_t>(rank)];
    return std::vector<T>(got, got + count);
  }
};

// Every rank's result has exactly the reference's bits (so all ranks agree bit for bit).
template <class T>
void require_all_equal(const Buffers<T>& b, const std::vector<T>& expected, const std::string& what) {
  for (int r = 0; r < static_cast<int>(b.in.size()); ++r) {
    INFO(what << " rank " << r << " first differing byte " << first_difference(bytes_of(b.result(r)), bytes_of(expected)));
    REQUIRE(first_difference(bytes_of(b.result(r)), bytes_of(expected)) == -1);
  }
}

template <class T>
void check_tree(Team& team, std::size_t count, ReduceOp op, bool in_place, std::size_t offset, std::uint32_t seed) {
  const auto inputs = inputs_for<T>(team.size(), count, op, seed);
  Buffers<T> b(inputs, in_place, offset);
  team.all_reduce<T>(b.in_ptr, b.out_ptr, count, op, Algorithm::tree);  // the Algorithm maps to the tree kernel
  team.synchronize();
  require_all_equal(b, tree_reference(inputs, op),
                    std::string("tree ") + harness::type_name<T>() + " " + chorus::to_string(op) + " ranks " +
                        std::to_string(team.size()) + " count " + std::to_string(count) + (in_place ? " in place" : ""));
}

template <class T>
void check_broadcast(Team& team, std::size_t count, int root, bool in_place, std::uint32_t seed) {
  const auto inputs = inputs_for<T>(team.size(), count, ReduceOp::sum, seed);
  Buffers<T> b(inputs, in_place, 0);
  std::vector<const T*> in_ptr(b.in_ptr.size(), nullptr);  // only the root's input is read
  in_ptr[static_cast<std::size_t>(root)] = b.in_ptr[static_cast<std::size_t>(root)];
  team.broadcast<T>(in_ptr, b.out_ptr, count, root, Algorithm::chain);  // the chain kernel (named ring)
  team.synchronize();
  require_all_equal(b, inputs[static_cast<std::size_t>(root)],
                    std::string("chain broadcast ") + harness::type_name<T>() + " ranks " + std::to_string(team.size()) +
                        " count " + std::to_string(count) + " root " + std::to_string(root));
}

template <class T>
void check_reduce(Team& team, const std::vector<int>& order, std::size_t count, ReduceOp op, int root, bool in_place,
                  std::uint32_t seed) {
  const auto inputs = inputs_for<T>(team.size(), count, op, seed);
  Buffers<T> b(inputs, in_place, 0);
  std::vector<T*> out_ptr(b.out_ptr.size(), nullptr);  // only the root's output is written
  out_ptr[static_cast<std::size_t>(root)] = b.out_ptr[static_cast<std::size_t>(root)];
  team.reduce<T>(b.in_ptr, out_ptr, count, op, root, Algorithm::chain);
  team.synchronize();
  INFO("chain reduce " << harness::type_name<T>() << " " << chorus::to_string(op) << " ranks " << team.size() << " count "
                       << count << " root " << root);
  REQUIRE(first_difference(bytes_of(b.result(root)), bytes_of(chain_reference(inputs, op, root, order))) == -1);
  for (int r = 0; r < team.size(); ++r) {  // no input is written, but the root's in place
    if (r == root && in_place) continue;
    const T* input = b.in_ptr[static_cast<std::size_t>(r)];
    REQUIRE(first_difference(bytes_of(std::vector<T>(input, input + count)), bytes_of(inputs[static_cast<std::size_t>(r)])) == -1);
  }
}

// Every tree edge's sender has sent exactly what its receiver has received, in both directions.
bool tree_counters_agree(const Team& team, int blocks) {
  const int n = team.size();
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < kernel::kTrees; ++t) {
      for (int rank = 0; rank < n; ++rank) {
        const int parent = algo::tree_parent(t, rank, n);
        if (parent < 0) continue;
        const int link = algo::tree_child(t, parent, n, 0) == rank ? 0 : 1;
        const auto& mine = team.tree_counters(rank, b);
        const auto& theirs = team.tree_counters(parent, b);
        if (mine.sent[t][kernel::kTreeParentLink] != theirs.received[t][link]) return false;
        if (theirs.sent[t][link] != mine.received[t][kernel::kTreeParentLink]) return false;
      }
    }
  }
  return true;
}


const std::size_t kLarge = chorus::test::kSanitized ? 700 : 4099;  // many slots and pipeline rounds per block

}  // namespace

TEST_CASE("tree pieces tile each half of every block's share and fit a slot") {
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{17}, std::size_t{1000},
                            std::size_t{4099}}) {
    for (int blocks : {1, 2, 3, 7}) {
      for (std::size_t slot : {std::size_t{1}, std::size_t{4}, std::size_t{16}}) {
        for (int t = 0; t < 2; ++t) {
          const algo::Range half = algo::chunk_range(count, 2, static_cast<std::size_t>(t));
          std::size_t next = half.offset;
          for (int b = 0; b < blocks; ++b) {
            const std::size_t pieces = kernel::tree_pieces(count, blocks, b, slot);
            for (std::size_t s = 0; s < pieces; ++s) {
              const algo::Range r = kernel::tree_piece(count, blocks, b, t, pieces, s);
              if (r.offset != next || r.count > slot) {
                FAIL("count " << count << " blocks " << blocks << " slot " << slot << " tree " << t << " block " << b << " piece "
                              << s << ": [" << r.offset << ", +" << r.count << ") expected at " << next);
              }
              next += r.count;
            }
          }
          REQUIRE(next == half.offset + half.count);
        }
      }
    }
  }
}

TEST_CASE("tree all_reduce: every rank gets the root's bits in the documented fold order, 1-8 ranks, awkward counts") {
  for (int n = 1; n <= 8; ++n) {
    for (int blocks : {1, 3}) {
      Team team(n, small_options(blocks, 3));
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{33}, kLarge}) {
        check_tree<float>(team, count, ReduceOp::sum, false, 0, static_cast<std::uint32_t>(count));
        check_tree<float>(team, count, ReduceOp::sum, true, 1, static_cast<std::uint32_t>(count + 1));  // misaligned, in place
      }
      INFO("ranks " << n << " blocks " << blocks);
      REQUIRE(tree_counters_agree(team, blocks));
    }
  }
}

TEST_CASE("tree all_reduce: half, bfloat16, double and integers; sum, prod, min, max, avg") {
  const std::size_t count = chorus::test::kSanitized ? 150 : 333;
  for (int n : {2, 3, 5, 8}) {
    Team team(n, small_options(2, 2));
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      check_tree<chorus::half>(team, count, op, false, 0, 3);
      check_tree<chorus::bfloat16>(team, count, op, op == ReduceOp::max, 0, 4);
      check_tree<double>(team, count, op, false, 0, 5);
      check_tree<float>(team, count, op, false, 0, 6);
      if (op != ReduceOp::avg) {
        check_tree<std::int32_t>(team, count, op, false, 0, 7);
        check_tree<std::uint8_t>(team, count, op, false, 0, 8);
      }
    }
  }
}

TEST_CASE("tree all_reduce: a fold order other than the kernel's gives other bits (the check can see order)") {
  // 5 ranks of order-sensitive floats: the tree's order and the rank order 0..n-1 differ somewhere.
  const auto inputs = inputs_for<float>(5, 2000, ReduceOp::sum, 11);
  std::vector<float> rank_order = inputs[0];
  for (int r = 1; r < 5; ++r) {
    for (std::size_t i = 0; i < rank_order.size(); ++i) rank_order[i] += inputs[static_cast<std::size_t>(r)][i];
  }
  REQUIRE(first_difference(bytes_of(rank_order), bytes_of(tree_reference(inputs, ReduceOp::sum))) != -1);
}

TEST_CASE("tree all_reduce: counters continue across calls, across the 32-bit wrap and between ring calls") {
  for (int n : {3, 4, 7}) {
    Team team(n, small_options(2, 2, 0, identity_order(n)));
    team.advance_counters_to(0xfffffff0u);  // a few pieces short of the wrap
    for (int call = 0; call < 4; ++call) {
      check_tree<float>(team, 300 + static_cast<std::size_t>(call) * 7, ReduceOp::sum, call % 2 == 1, 0,
                        static_cast<std::uint32_t>(call));
      // A ring all_reduce in between: its FIFO and counters are its own.
      const auto inputs = inputs_for<float>(n, 200, ReduceOp::sum, 40u + static_cast<std::uint32_t>(call));
      const Outputs ring = run_both(team, identity_order(n), inputs, ReduceOp::sum, KernelAlgorithm::ring, false);
      for (int r = 0; r < n; ++r) REQUIRE(first_difference(ring.twin[static_cast<std::size_t>(r)], ring.host[static_cast<std::size_t>(r)]) == -1);
    }
    INFO("ranks " << n);
    // Tree 0's root sent on its child-0 link past the wrap.
    CHECK(team.tree_counters(algo::tree_root(0, n), 0).sent[0][0] < 0x1000u);
    CHECK(tree_counters_agree(team, 2));
  }
}

TEST_CASE("tree and chain with seeded skew between ranks, calls in a row") {
  const int rounds = chorus::test::kSanitized ? 2 : 4;
  for (int n : {5, 7, 8}) {
    for (std::uint32_t seed : {1u, 977u}) {
      const auto order = zigzag_order(n);
      Team team(n, small_options(2, 2, seed, order));
      for (int call = 0; call < rounds; ++call) {
        const auto c = static_cast<std::uint32_t>(call);
        check_tree<float>(team, 500 + c * 31, ReduceOp::sum, false, 0, seed + c);
        check_broadcast<float>(team, 400 + c * 13, call % n, call % 2 == 0, seed + c);
        check_reduce<float>(team, order, 450 + c * 17, ReduceOp::sum, (n - 1 - call) % n, call % 2 == 1, seed + c);
      }
      INFO("ranks " << n << " seed " << seed);
      REQUIRE(tree_counters_agree(team, 2));
    }
  }
}

TEST_CASE("chain broadcast: every rank gets the root's bits, 1-8 ranks, any root, ring orders, awkward counts") {
  for (int n = 1; n <= 8; ++n) {
    for (bool zigzag : {false, true}) {
      Team team(n, small_options(zigzag ? 3 : 1, 2, 0, zigzag ? zigzag_order(n) : identity_order(n)));
      for (int root : {0, n - 1, n / 2}) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, kLarge}) {
          check_broadcast<float>(team, count, root, count == 5, static_cast<std::uint32_t>(count));
        }
        check_broadcast<chorus::half>(team, 333, root, true, 2);
        check_broadcast<std::int64_t>(team, 333, root, false, 3);
      }
    }
  }
}

TEST_CASE("chain reduce: the root gets the documented fold order's bits, 1-8 ranks, any root, types and ops") {
  for (int n = 1; n <= 8; ++n) {
    const auto order = n % 2 == 0 ? zigzag_order(n) : identity_order(n);
    Team team(n, small_options(2, 2, 0, order));
    for (int root : {0, n - 1, n / 2}) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, kLarge}) {
        check_reduce<float>(team, order, count, ReduceOp::sum, root, false, static_cast<std::uint32_t>(count));
        check_reduce<float>(team, order, count, ReduceOp::avg, root, true, 2);
      }
      for (ReduceOp op : {ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
        check_reduce<chorus::bfloat16>(team, order, 99, op, root, false, 4);
        check_reduce<std::int32_t>(team, order, 99, op, root, true, 5);
      }
      check_reduce<chorus::half>(team, order, 99, ReduceOp::sum, root, false, 6);
      check_reduce<double>(team, order, 99, ReduceOp::sum, root, false, 7);
    }
  }
}

TEST_CASE("a rank that skips a tree or chain call: the others time out naming who waited for whom") {
  struct Case {
    const char* name;
    int skipped;
  };
  for (const Case c : {Case{"tree", 2}, Case{"tree", 0}, Case{"broadcast", 3}, Case{"reduce", 1}}) {
    const int n = 5;
    std::vector<std::vector<float>> in(n, std::vector<float>(256, 1.0f)), out(n, std::vector<float>(256));
    std::vector<const float*> in_ptr;
    std::vector<float*> out_ptr;
    for (int r = 0; r < n; ++r) {
      in_ptr.push_back(in[static_cast<std::size_t>(r)].data());
      out_ptr.push_back(out[static_cast<std::size_t>(r)].data());
    }
    std::vector<bool> takes_part(n, true);
    takes_part[static_cast<std::size_t>(c.skipped)] = false;
    std::string message;
    ErrorCode code = ErrorCode::internal;
    std::unique_ptr<Team> team;
    with_timeout_ms("300", [&] {
      team = std::make_unique<Team>(n, small_options(1, 2));
      const std::string name = c.name;
      const Collective collective = name == "tree" ? Collective::all_reduce : name == "broadcast" ? Collective::broadcast : Collective::reduce;
      const KernelAlgorithm kernel = name == "tree" ? KernelAlgorithm::tree : KernelAlgorithm::ring;
      team->collective_with<float>(collective, in_ptr, out_ptr, 256, ReduceOp::sum, 4, kernel, {}, takes_part);
      try {
        team->synchronize();
      } catch (const chorus::Error& e) {
        message = e.what();
        code = e.code();
      }
    });
    INFO(c.name << " skipping rank " << c.skipped << ": " << message);
    CHECK(code == ErrorCode::timeout);
    CHECK(message.find("waited 300 ms for rank") != std::string::npos);
    const std::string name = c.name;
    if (name == "tree") {
      CHECK(message.find("tree block 0") != std::string::npos);
      CHECK(message.find("tree reduce: partial from a child") != std::string::npos);  // the first stall is on the way up
    } else {
      CHECK(message.find("ring block 0") != std::string::npos);
      CHECK(message.find("Simple FIFO") != std::string::npos);
    }
    // The record is the lowest rank's first stall. 5 ranks: rank 0 is tree 0's root, whose one child is rank 4,
    // which waits for its child 2; rank 1 is tree 1's root, whose one child is rank 0.
    if (name == "tree" && c.skipped == 2) CHECK(message.find("on rank 0: tree block 0 waited 300 ms for rank 4") != std::string::npos);
    if (name == "tree" && c.skipped == 0) CHECK(message.find("on rank 1: tree block 0 waited 300 ms for rank 0") != std::string::npos);
    try {
      team->all_reduce<float>(in_ptr, out_ptr, 256, ReduceOp::sum, Algorithm::tree);
      FAIL("a broken team ran a call");
    } catch (const chorus::Error& e) {
      CHECK(e.code() == ErrorCode::peer_failed);
    }
  }
}

TEST_CASE("tree and chain are refused where they do not apply") {
  Team team(3, small_options(1, 2));
  std::vector<float> a(4), b(4), c(4);
  const std::vector<const float*> in{a.data(), b.data(), c.data()};
  const std::vector<float*> out{a.data(), b.data(), c.data()};
  const auto refused = [&](auto&& call, const std::string& text) {
    try {
      call();
      FAIL("not refused: " << text);
    } catch (const chorus::Error& e) {
      INFO(e.what());
      CHECK(e.code() == ErrorCode::unsupported);
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  const auto with = [&](Collective collective) {
    return [&, collective] { team.collective_with<float>(collective, in, out, 1, ReduceOp::sum, 1, KernelAlgorithm::tree); };
  };
  refused(with(Collective::broadcast), "no tree kernel for broadcast");
  refused(with(Collective::reduce), "no tree kernel for reduce");
  refused(with(Collective::all_gather), "no tree kernel for all_gather");
  CHECK(std::string(kernel::to_string(KernelAlgorithm::tree)) == "tree");
  CHECK(std::string(kernel::to_string(kernel::WaitKind::tree_down_free)) == "tree broadcast: free slot at a child");
}

}  // namespace test_twin_tree
