// Determinism with inexact floating-point inputs: every rank ends with the same bits, two runs
// give the same bits, and patterns that fold in rank order (one_shot, two_shot, direct) match a
// rank-order fold computed here exactly.
#include <catch2/catch.hpp>

#include <random>

#include "harness.hpp"

namespace test_determinism {

namespace {

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::algo::Collective;
using chorus::algo::Pattern;
using chorus::host::Comm;
using chorus::host::Team;

template <class T>
std::vector<T> noisy(int rank, std::size_t count, ReduceOp op) {
  std::mt19937 generator(static_cast<unsigned>(1234 + rank));
  std::uniform_real_distribution<float> around_one(0.9f, 1.1f);
  std::uniform_real_distribution<float> wide(-3.0f, 3.0f);
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(op == ReduceOp::prod ? around_one(generator) : wide(generator));
  return values;
}

template <class T>
std::vector<T> fold_in_rank_order(int ranks, std::size_t count, ReduceOp op) {
  std::vector<T> acc = noisy<T>(0, count, op);
  for (int r = 1; r < ranks; ++r) {
    const std::vector<T> x = noisy<T>(r, count, op);
    for (std::size_t i = 0; i < count; ++i) acc[i] = chorus::combine(op, acc[i], x[i]);
  }
  if (op == ReduceOp::avg) chorus::finish_avg(acc.data(), count, ranks);
  return acc;
}

// all_reduce results of every rank, for one run.
template <class T>
std::vector<std::vector<T>> all_reduce_once(int ranks, std::size_t count, ReduceOp op, Algorithm algorithm) {
  Team team(ranks);
  std::vector<std::vector<T>> got(static_cast<std::size_t>(ranks));
  harness::run(team, [&](Comm& c) {
    std::vector<T> in = noisy<T>(c.rank(), count, op);
    std::vector<T> out(count);
    c.all_reduce(in.data(), out.data(), count, op, algorithm);
    got[static_cast<std::size_t>(c.rank())] = std::move(out);
  });
  return got;
}

template <class T>
void check_all_reduce(int ranks, std::size_t count) {
  for (Algorithm algorithm : harness::kAlgorithms) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::avg}) {
      const auto first = all_reduce_once<T>(ranks, count, op, algorithm);
      const auto second = all_reduce_once<T>(ranks, count, op, algorithm);
      INFO(harness::type_name<T>() << " " << chorus::to_string(op) << " " << chorus::to_string(algorithm) << " ranks "
                                   << ranks << " count " << count);
      for (int r = 0; r < ranks; ++r) {
        CHECK(harness::same_bits(first[static_cast<std::size_t>(r)], first[0]));
        CHECK(harness::same_bits(second[static_cast<std::size_t>(r)], first[0]));
      }
      if (algorithm == Algorithm::one_shot || algorithm == Algorithm::two_shot) {
        CHECK(harness::same_bits(first[0], fold_in_rank_order<T>(ranks, count, op)));
      }
    }
  }
}

}  // namespace

TEST_CASE("all_reduce of inexact floats is bit-identical across ranks and runs", "[determinism]") {
  for (int ranks : {3, 5, 8}) {
    check_all_reduce<float>(ranks, 1019);
    check_all_reduce<double>(ranks, 257);
    check_all_reduce<chorus::half>(ranks, 300);
    check_all_reduce<chorus::bfloat16>(ranks, 300);
  }
  check_all_reduce<float>(2, 3 * harness::slice_elements<float>() + 7);  // several pipeline slices
}

TEST_CASE("direct reduce_scatter folds in rank order", "[determinism]") {
  const int ranks = 6;
  const std::size_t count = 333;
  Team team(ranks);
  std::vector<std::vector<float>> got(ranks);
  harness::run(team, [&](Comm& c) {
    const std::vector<float> in = noisy<float>(c.rank(), count * ranks, ReduceOp::sum);
    std::vector<float> out(count);
    c.reduce_scatter(in.data(), out.data(), count, ReduceOp::sum, chorus::Algorithm::direct);
    got[static_cast<std::size_t>(c.rank())] = out;
  });
  const std::vector<float> all = fold_in_rank_order<float>(ranks, count * ranks, ReduceOp::sum);
  for (int r = 0; r < ranks; ++r) {
    const auto begin = all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count);
    CHECK(harness::same_bits(got[static_cast<std::size_t>(r)], std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(count))));
  }
}

}  // namespace test_determinism
