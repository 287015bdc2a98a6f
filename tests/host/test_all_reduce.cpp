// all_reduce on the host backend: every algorithm x rank counts 1..9 and 16 x awkward counts x
// types x ops, in place and out of place, compared bit for bit with a reference. Up to 4 ranks
// the type x op x count matrix is complete; above, each type cycles through the ops across the
// counts, so every type, op and count still runs at every rank count.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_all_reduce {

namespace {

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

struct Case {
  std::size_t count;
  ReduceOp op;
  bool in_place;
};

std::vector<Case> cases_for(int ranks, int type_index, int algorithm_index) {
  std::vector<Case> cases;
  const std::vector<std::size_t> counts = harness::awkward_counts(ranks);
  for (std::size_t c = 0; c < counts.size(); ++c) {
    for (int o = 0; o < 5; ++o) {
      if (ranks > 4 && o != static_cast<int>((c + type_index + algorithm_index) % 5)) continue;
      for (bool in_place : {false, true}) cases.push_back(Case{counts[c], harness::kOps[o], in_place});
    }
  }
  return cases;
}

template <class T>
void check_all_reduce(int ranks, Algorithm algorithm, const std::vector<Case>& cases) {
  Team team(ranks);
  // got[case][rank]: each rank writes only its own entries; the main thread checks afterwards.
  std::vector<std::vector<std::vector<T>>> got(cases.size(), std::vector<std::vector<T>>(ranks));
  std::vector<std::vector<char>> input_kept(cases.size(), std::vector<char>(ranks, 1));
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case& k = cases[c];
      std::vector<T> in = harness::inputs<T>(k.op, r, k.count);
      if (k.in_place) {
        comm.all_reduce(in.data(), in.data(), k.count, k.op, algorithm);
        got[c][r] = std::move(in);
      } else {
        std::vector<T> out(k.count, harness::sentinel<T>());
        comm.all_reduce(in.data(), out.data(), k.count, k.op, algorithm);
        input_kept[c][r] = harness::same_bits(in, harness::inputs<T>(k.op, r, k.count));
        got[c][r] = std::move(out);
      }
    }
  });
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    const std::vector<T> expected = harness::reference<T>(k.op, ranks, k.count);
    for (int r = 0; r < ranks; ++r) {
      INFO(harness::type_name<T>() << " " << chorus::to_string(k.op) << " " << chorus::to_string(algorithm)
                                   << " ranks " << ranks << " count " << k.count << (k.in_place ? " in place" : "")
                                   << " rank " << r << ": got " << harness::show(got[c][r]) << " expected "
                                   << harness::show(expected));
      CHECK(harness::same_bits(got[c][r], expected));
      CHECK(input_kept[c][r]);
    }
  }
}

}  // namespace

TEST_CASE("all_reduce: every algorithm, rank count, count, type and op", "[all_reduce]") {
  for (int ranks : harness::rank_counts()) {
    for (int a = 0; a < 6; ++a) {
      const Algorithm algorithm = harness::kAlgorithms[a];
      harness::for_each_type([&](auto type, int type_index) {
        using T = decltype(type);
        check_all_reduce<T>(ranks, algorithm, cases_for(ranks, type_index, a));
      });
    }
  }
}

TEST_CASE("all_reduce: counts longer than a pipeline slice", "[all_reduce]") {
  // These counts cut every chunk (ring: count / ranks) into several slices, unevenly.
  const std::size_t floats = 3 * harness::slice_elements<float>() + 5;
  const std::vector<Case> cases = {{floats, ReduceOp::sum, false}, {floats, ReduceOp::max, true}};
  for (int ranks : {2, 3}) {
    for (Algorithm algorithm : harness::kAlgorithms) check_all_reduce<float>(ranks, algorithm, cases);
  }
  const std::size_t bytes = 5 * harness::slice_elements<std::int8_t>() + 3;
  check_all_reduce<std::int8_t>(4, Algorithm::ring, {{bytes, ReduceOp::sum, false}, {bytes, ReduceOp::min, true}});
  check_all_reduce<double>(4, Algorithm::tree, {{2 * harness::slice_elements<double>() + 1, ReduceOp::prod, true}});
}

TEST_CASE("all_reduce: many calls in a row reuse schedules and stay correct", "[all_reduce]") {
  // Alternating sizes and algorithms exercises the schedule cache, the two-entry descriptor
  // ring and the sequence numbers across many calls.
  const int ranks = 4;
  const int calls = 300;
  Team team(ranks);
  std::vector<int> wrong(ranks, 0);
  harness::run(team, [&](Comm& comm) {
    for (int call = 0; call < calls; ++call) {
      const std::size_t count = static_cast<std::size_t>(1 + (call * 37) % 500);
      const Algorithm algorithm = harness::kAlgorithms[call % 6];
      std::vector<std::int32_t> in = harness::inputs<std::int32_t>(ReduceOp::sum, comm.rank() + call, count);
      std::vector<std::int32_t> out(count);
      comm.all_reduce(in.data(), out.data(), count, ReduceOp::sum, algorithm);
      for (std::size_t i = 0; i < count; ++i) {
        std::int32_t want = 0;
        for (int r = 0; r < ranks; ++r) want += harness::input_value<std::int32_t>(ReduceOp::sum, r + call, i);
        if (out[i] != want) {
          ++wrong[comm.rank()];
          break;
        }
      }
    }
  });
  for (int r = 0; r < ranks; ++r) CHECK(wrong[r] == 0);
}

}  // namespace test_all_reduce
