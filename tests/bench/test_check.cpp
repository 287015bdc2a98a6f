// The #wrong check: its inputs must make every reduction exact in every type, whatever order an
// algorithm combines ranks in, and its expected values must follow each collective's definition.
#include <catch2/catch.hpp>
#include <chorus/bench/check.hpp>

#include <cstring>
#include <vector>

namespace test_check {

using chorus::ReduceOp;
using chorus::Collective;
using chorus::bench::Check;

namespace {

constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};
constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather,
                                       Collective::broadcast,  Collective::reduce,         Collective::all_to_all};

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Folds the contributions of the ranks in `order` with chorus::combine, then finishes avg.
template <class T>
T fold(const Check<T>& check, ReduceOp op, const std::vector<int>& order, std::size_t index) {
  T acc = check.input(order[0], index);
  for (std::size_t k = 1; k < order.size(); ++k) acc = chorus::combine(op, acc, check.input(order[k], index));
  return op == ReduceOp::avg ? chorus::divide_by(acc, static_cast<int>(order.size())) : acc;
}

// Pairwise (tree-shaped) combination, the other order real algorithms use.
template <class T>
T fold_tree(const Check<T>& check, ReduceOp op, int lo, int hi, std::size_t index) {
  if (hi - lo == 1) return check.input(lo, index);
  const int mid = lo + (hi - lo) / 2;
  return chorus::combine(op, fold_tree(check, op, lo, mid, index), fold_tree(check, op, mid, hi, index));
}

}  // namespace

TEMPLATE_TEST_CASE("reductions of the check's inputs are exact in any order", "", std::int8_t, std::uint8_t,
                   std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, chorus::half, float, double,
                   chorus::bfloat16) {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 85, 86, 100, 128, 130, 257}) {
    for (ReduceOp op : kOps) {
      INFO("ranks " << n << " op " << chorus::to_string(op));
      const Check<TestType> check(Collective::all_reduce, op, n, 0, 1000);
      std::vector<int> forward, backward, rotated;
      for (int r = 0; r < n; ++r) {
        forward.push_back(r);
        backward.push_back(n - 1 - r);
        rotated.push_back((r + n / 2 + 1) % n);
      }
      std::size_t mismatches = 0;
      for (std::size_t j = 0; j < static_cast<std::size_t>(n) + 40; ++j) {
        const TestType want = check.expected(0, j);
        TestType tree = fold_tree(check, op, 0, n, j);
        if (op == ReduceOp::avg) tree = chorus::divide_by(tree, n);
        for (const TestType got : {fold(check, op, forward, j), fold(check, op, backward, j),
                                   fold(check, op, rotated, j), tree}) {
          if (!same_bits(got, want)) ++mismatches;
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("the input patterns are the documented ones") {
  const Check<float> prod(Collective::all_reduce, ReduceOp::prod, 4, 0, 10);
  for (std::size_t j = 0; j < 10; ++j) {
    int twos = 0;
    for (int r = 0; r < 4; ++r) twos += prod.input(r, j) == 2.0f;
    CHECK(twos == (j % 5 == 4 ? 0 : 1));
    CHECK(prod.expected(0, j) == (j % 5 == 4 ? 1.0f : 2.0f));
  }
  const Check<std::uint8_t> umax(Collective::all_reduce, ReduceOp::max, 3, 0, 11);
  const Check<std::int8_t> smin(Collective::all_reduce, ReduceOp::min, 3, 0, 11);
  for (std::size_t j = 0; j < 11; ++j) {
    CHECK(umax.input(2, j) <= 10);
    CHECK(smin.input(2, j) >= -5);
    CHECK(smin.input(2, j) <= 5);
  }
  const Check<float> sum(Collective::all_reduce, ReduceOp::sum, 4, 0, 8);
  CHECK(sum.expected(0, 0) == 0.0f + 1 + 2 + 3);
  const Check<float> avg(Collective::all_reduce, ReduceOp::avg, 4, 0, 8);
  CHECK(avg.expected(3, 0) == 1.5f);
  const Check<std::int32_t> iavg(Collective::all_reduce, ReduceOp::avg, 4, 0, 8);
  CHECK(iavg.expected(0, 0) == 1);  // 6 / 4 truncates
  SECTION("bfloat16 sums stay within its 256 exact integers by silencing ranks past 85") {
    const Check<chorus::bfloat16> wide(Collective::all_reduce, ReduceOp::sum, 200, 0, 4);
    CHECK(static_cast<float>(wide.input(84, 0)) == 0.0f);  // (84 + 0) % 4
    CHECK(static_cast<float>(wide.input(84, 1)) == 1.0f);
    for (std::size_t j = 0; j < 4; ++j) CHECK(static_cast<float>(wide.input(85, j)) == 0.0f);
  }
  SECTION("data values fit int8") {
    const Check<std::int8_t> data(Collective::all_gather, ReduceOp::sum, 64, 0, 300);
    for (int r = 0; r < 64; ++r) {
      for (std::size_t j = 0; j < 300; ++j) CHECK((data.input(r, j) >= 0 && data.input(r, j) <= 100));
    }
  }
}

namespace {

// Runs the collective by its definition on plain vectors, folding in reverse rank order to make
// sure the check does not depend on the order.
template <class T>
std::vector<std::vector<T>> simulate(const Check<T>& check, Collective collective, ReduceOp op, int n, int root,
                                     std::size_t c) {
  std::vector<std::vector<T>> in(n, std::vector<T>(check.input_count()));
  for (int r = 0; r < n; ++r) check.fill_input(r, in[r].data());
  std::vector<std::vector<T>> out(n, std::vector<T>(check.output_count(), T(-7)));
  const auto reduce_at = [&](std::size_t j) {
    T acc = in[n - 1][j];
    for (int s = n - 2; s >= 0; --s) acc = chorus::combine(op, acc, in[s][j]);
    return op == ReduceOp::avg ? chorus::divide_by(acc, n) : acc;
  };
  for (int r = 0; r < n; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    for (std::size_t i = 0; i < out[r].size(); ++i) {
      switch (collective) {
        case Collective::all_reduce: out[r][i] = reduce_at(i); break;
        case Collective::reduce:
          if (r == root) out[r][i] = reduce_at(i);
          break;
        case Collective::reduce_scatter: out[r][i] = reduce_at(ur * c + i); break;
        case Collective::all_gather: out[r][i] = in[i / c][i % c]; break;
        case Collective::all_to_all: out[r][i] = in[i / c][ur * c + i % c]; break;
        case Collective::broadcast: out[r][i] = in[root][i]; break;
      }
    }
  }
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("expected values follow each collective's definition", "", std::int8_t, std::uint32_t, float,
                   chorus::half, chorus::bfloat16, double) {
  for (Collective collective : kCollectives) {
    for (ReduceOp op : kOps) {
      for (int n : {1, 2, 3, 5, 8}) {
        for (std::size_t c : {0, 1, 2, 7, 13}) {
          const int root = n > 2 ? 2 : n - 1;
          INFO(chorus::to_string(collective) << " " << chorus::to_string(op) << " ranks " << n << " count " << c);
          const Check<TestType> check(collective, op, n, root, c);
          auto out = simulate(check, collective, op, n, root, c);
          std::size_t wrong = 0;
          for (int r = 0; r < n; ++r) wrong += check.count_wrong(r, out[r].data());
          CHECK(wrong == 0);
          // Corrupting one element of a checked rank is caught exactly once.
          const int victim = collective == Collective::reduce ? root : n - 1;
          if (!out[victim].empty()) {
            out[victim].back() = TestType(99);
            CHECK(check.count_wrong(victim, out[victim].data()) == 1);
          }
        }
      }
    }
  }
}

TEST_CASE("reduce does not check non-root receive buffers") {
  const Check<float> check(Collective::reduce, ReduceOp::sum, 4, 1, 5);
  std::vector<float> garbage(5, -1.0f);
  CHECK_FALSE(check.checks(0));
  CHECK(check.checks(1));
  CHECK(check.count_wrong(0, garbage.data()) == 0);
  CHECK(check.count_wrong(1, garbage.data()) == 5);
}

TEST_CASE("the check compares bits: -0 is not +0") {
  const Check<float> check(Collective::all_reduce, ReduceOp::sum, 4, 0, 4);  // every element: 0+1+2+3 in some order
  std::vector<float> out{6.0f, 6.0f, 6.0f, 6.0f};
  CHECK(check.count_wrong(0, out.data()) == 0);
  const Check<float> zeros(Collective::all_reduce, ReduceOp::sum, 1, 0, 1);  // rank 0, index 0: 0
  std::vector<float> negative_zero{-0.0f};
  CHECK(zeros.count_wrong(0, negative_zero.data()) == 1);
}

TEST_CASE("buffer counts follow the collective") {
  CHECK(Check<float>(Collective::all_reduce, ReduceOp::sum, 4, 0, 6).input_count() == 6);
  CHECK(Check<float>(Collective::all_gather, ReduceOp::sum, 4, 0, 6).input_count() == 6);
  CHECK(Check<float>(Collective::all_gather, ReduceOp::sum, 4, 0, 6).output_count() == 24);
  CHECK(Check<float>(Collective::reduce_scatter, ReduceOp::sum, 4, 0, 6).input_count() == 24);
  CHECK(Check<float>(Collective::reduce_scatter, ReduceOp::sum, 4, 0, 6).output_count() == 6);
  CHECK(Check<float>(Collective::all_to_all, ReduceOp::sum, 4, 0, 6).output_count() == 24);
}

}  // namespace test_check
