// NaN and Inf on the host backend (the promise in docs/communicator.md, "Bit-identical results"): every
// rank holds the same bits; an element is NaN exactly where IEEE makes it NaN, and then the canonical NaN
// whatever the inputs' signs and payloads; every other element has the reference's bits; min and max
// follow the rule in docs/errors.md bit for bit. float, double, half and bfloat16; every all_reduce algorithm at 2..5 ranks, in place and not,
// with buffers at different alignments on different ranks; reduce_scatter and reduce too.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "support/nan_inf_values.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

namespace test_nan_inf {

namespace {

using chorus::Algorithm;
using chorus::Collective;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};

template <class T>
std::string label(const char* call, ReduceOp op, int ranks, const char* algorithm, std::size_t count, bool in_place) {
  return std::string(call) + " " + harness::type_name<T>() + " " + chorus::to_string(op) + " " + algorithm + " ranks " +
         std::to_string(ranks) + " count " + std::to_string(count) + (in_place ? " in place" : "");
}

// Every all_reduce algorithm at one rank count: results[case][rank], each rank writing only its own.
// Rank r's buffers start r % 2 elements into their vectors, so ranks see different alignments.
template <class T>
std::vector<std::string> check_all_reduce(int ranks, std::size_t count) {
  struct Case {
    Algorithm algorithm;
    ReduceOp op;
    bool in_place;
  };
  std::vector<Case> cases;
  for (const harness::Variant& variant : harness::variants(Collective::all_reduce)) {
    for (ReduceOp op : kOps) {
      for (bool in_place : {false, true}) cases.push_back(Case{variant.algorithm, op, in_place});
    }
  }
  std::vector<std::vector<std::vector<T>>> got(cases.size(), std::vector<std::vector<T>>(static_cast<std::size_t>(ranks)));
  Team team(ranks);
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    const std::size_t skew = static_cast<std::size_t>(r % 2);
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case& k = cases[c];
      std::vector<T> in(count + skew), out(count + skew, T{});
      const std::vector<T> values = nan_inf::inputs<T>(k.op, ranks, r, count);
      std::copy(values.begin(), values.end(), in.begin() + static_cast<std::ptrdiff_t>(skew));
      T* result = k.in_place ? in.data() + skew : out.data() + skew;
      comm.all_reduce(in.data() + skew, result, count, k.op, k.algorithm);
      got[c][static_cast<std::size_t>(r)].assign(result, result + count);
    }
  });
  std::vector<std::string> failures;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    const std::string what = label<T>("all_reduce", k.op, ranks, chorus::to_string(k.algorithm), count, k.in_place);
    std::vector<const T*> per_rank;
    for (const std::vector<T>& result : got[c]) per_rank.push_back(result.data());
    nan_inf::check_same_bits(what, per_rank, count, failures);
    nan_inf::check_reduced(what, k.op, ranks, got[c][0].data(), count, 0, failures);
  }
  return failures;
}

template <class T>
void all_reduce_every_rank_count() {
  for (int ranks = 2; ranks <= 5; ++ranks) {
    const std::vector<std::string> failures = check_all_reduce<T>(ranks, 1031);
    INFO(harness::type_name<T>() << " at " << ranks << " ranks");
    CHECK(failures == std::vector<std::string>{});
  }
}

}  // namespace

TEST_CASE("the inputs make NaN, Inf and finite results for every op", "[nan]") {
  // Guards the test itself: the drawn inputs must produce every class of result at every rank count.
  for (int ranks = 2; ranks <= 5; ++ranks) {
    for (ReduceOp op : kOps) {
      std::size_t nan = 0, inf = 0, finite = 0;
      for (std::size_t i = 0; i < 1031; ++i) {
        const float x = static_cast<float>(nan_inf::reference_at<chorus::half>(op, ranks, i));
        nan += std::isnan(x) ? 1 : 0;
        inf += std::isinf(x) ? 1 : 0;
        finite += std::isfinite(x) ? 1 : 0;
      }
      INFO(chorus::to_string(op) << " at " << ranks << " ranks: " << nan << " NaN, " << inf << " Inf, " << finite
                                 << " finite");
      // min and max give NaN only where every rank holds one: the chosen elements 0 and 11.
      CHECK(nan >= (op == ReduceOp::max || op == ReduceOp::min ? 2u : 20u));
      CHECK(inf >= 20);
      CHECK(finite >= 20);
    }
  }
  // Where every rank holds a NaN (element 0), min and max give the canonical NaN.
  CHECK(nan_inf::extreme_by_rule<float>(ReduceOp::max, 3, 0) == 0x7fffffffu);
}

TEST_CASE("all_reduce with NaN and Inf: float", "[nan]") { all_reduce_every_rank_count<float>(); }
TEST_CASE("all_reduce with NaN and Inf: double", "[nan]") { all_reduce_every_rank_count<double>(); }
TEST_CASE("all_reduce with NaN and Inf: half", "[nan]") { all_reduce_every_rank_count<chorus::half>(); }
TEST_CASE("all_reduce with NaN and Inf: bfloat16", "[nan]") { all_reduce_every_rank_count<chorus::bfloat16>(); }

TEST_CASE("all_reduce with NaN and Inf across pipeline slices", "[nan]") {
  // Several slices per chunk: each slice is combined by its own call of the element loop.
  const std::size_t count = 2 * harness::slice_elements<float>() + 77;
  for (int ranks : {2, 3}) {
    const std::vector<std::string> failures = check_all_reduce<float>(ranks, count);
    INFO(ranks << " ranks");
    CHECK(failures == std::vector<std::string>{});
  }
}

TEST_CASE("reduce_scatter and reduce with NaN and Inf", "[nan]") {
  using T = float;
  const std::size_t block = 263;
  for (int ranks : {2, 3, 5}) {
    const std::size_t total = block * static_cast<std::size_t>(ranks);
    const int root = ranks - 1;
    // [op][algorithm][rank]: reduce_scatter's block, and reduce's result at the root.
    const std::vector<Algorithm> scatter_algorithms = {Algorithm::automatic, Algorithm::ring, Algorithm::direct};
    const std::vector<Algorithm> reduce_algorithms = {Algorithm::automatic, Algorithm::chain, Algorithm::binomial};
    std::vector<std::vector<std::vector<std::vector<T>>>> scattered(
        std::size(kOps), std::vector<std::vector<std::vector<T>>>(scatter_algorithms.size(),
                                                                  std::vector<std::vector<T>>(static_cast<std::size_t>(ranks))));
    std::vector<std::vector<std::vector<T>>> reduced(std::size(kOps), std::vector<std::vector<T>>(reduce_algorithms.size()));
    Team team(ranks);
    harness::run(team, [&](Comm& comm) {
      const int r = comm.rank();
      for (std::size_t o = 0; o < std::size(kOps); ++o) {
        const std::vector<T> in = nan_inf::inputs<T>(kOps[o], ranks, r, total);
        for (std::size_t a = 0; a < scatter_algorithms.size(); ++a) {
          std::vector<T> out(block);
          comm.reduce_scatter(in.data(), out.data(), block, kOps[o], scatter_algorithms[a]);
          scattered[o][a][static_cast<std::size_t>(r)] = out;
        }
        for (std::size_t a = 0; a < reduce_algorithms.size(); ++a) {
          std::vector<T> out(total);
          comm.reduce(in.data(), out.data(), total, kOps[o], root, reduce_algorithms[a]);
          if (r == root) reduced[o][a] = out;
        }
      }
    });
    std::vector<std::string> failures;
    for (std::size_t o = 0; o < std::size(kOps); ++o) {
      for (std::size_t a = 0; a < scatter_algorithms.size(); ++a) {
        for (int r = 0; r < ranks; ++r) {
          const std::string what = label<T>("reduce_scatter", kOps[o], ranks, chorus::to_string(scatter_algorithms[a]), block,
                                            false) + " rank " + std::to_string(r);
          nan_inf::check_reduced(what, kOps[o], ranks, scattered[o][a][static_cast<std::size_t>(r)].data(), block,
                                 block * static_cast<std::size_t>(r), failures);
        }
      }
      for (std::size_t a = 0; a < reduce_algorithms.size(); ++a) {
        const std::string what = label<T>("reduce", kOps[o], ranks, chorus::to_string(reduce_algorithms[a]), total, false);
        nan_inf::check_reduced(what, kOps[o], ranks, reduced[o][a].data(), total, 0, failures);
      }
    }
    INFO(ranks << " ranks");
    CHECK(failures == std::vector<std::string>{});
  }
}

}  // namespace test_nan_inf
