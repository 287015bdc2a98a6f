// reduce_scatter on the host backend: automatic, ring and direct x rank counts 1..9 and 16 x
// awkward counts x types x ops, in place (recv == send + rank*count) and out of place.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_reduce_scatter {

namespace {

using chorus::ReduceOp;
using chorus::Collective;
using chorus::host::Comm;
using chorus::host::Team;

struct Case {
  std::size_t count;
  ReduceOp op;
  bool in_place;
};

template <class T>
void reduce_scatter(Comm& comm, const harness::Variant& v, const T* send, T* recv, std::size_t count, ReduceOp op) {
  comm.reduce_scatter(send, recv, count, op, v.algorithm);
}

template <class T>
void check(int ranks, const harness::Variant& variant, const std::vector<Case>& cases) {
  Team team(ranks);
  std::vector<std::vector<std::vector<T>>> got(cases.size(), std::vector<std::vector<T>>(ranks));
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case& k = cases[c];
      const std::size_t mine = static_cast<std::size_t>(r) * k.count;
      std::vector<T> in = harness::inputs<T>(k.op, r, k.count * static_cast<std::size_t>(ranks));
      if (k.in_place) {
        reduce_scatter(comm, variant, in.data(), in.data() + mine, k.count, k.op);
        got[c][r].assign(in.begin() + static_cast<std::ptrdiff_t>(mine),
                         in.begin() + static_cast<std::ptrdiff_t>(mine + k.count));
      } else {
        std::vector<T> out(k.count, harness::sentinel<T>());
        reduce_scatter(comm, variant, in.data(), out.data(), k.count, k.op);
        got[c][r] = std::move(out);
      }
    }
  });
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    for (int r = 0; r < ranks; ++r) {
      const std::vector<T> expected = harness::reference<T>(k.op, ranks, k.count, static_cast<std::size_t>(r) * k.count);
      INFO(harness::type_name<T>() << " " << chorus::to_string(k.op) << " " << variant.name() << " ranks " << ranks
                                   << " count " << k.count << (k.in_place ? " in place" : "") << " rank " << r
                                   << ": got " << harness::show(got[c][r]) << " expected " << harness::show(expected));
      CHECK(harness::same_bits(got[c][r], expected));
    }
  }
}

}  // namespace

TEST_CASE("reduce_scatter: every pattern, rank count, count, type and op", "[reduce_scatter]") {
  const auto variants = harness::variants(Collective::reduce_scatter);
  for (int ranks : harness::rank_counts()) {
    const auto counts = harness::awkward_counts(ranks);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      harness::for_each_type([&](auto type, int type_index) {
        using T = decltype(type);
        std::vector<Case> cases;
        for (std::size_t c = 0; c < counts.size(); ++c) {
          for (int o = 0; o < 5; ++o) {
            if (!harness::sampled(ranks, c, type_index, o, static_cast<int>(v))) continue;
            for (bool in_place : {false, true}) cases.push_back(Case{counts[c], harness::kOps[o], in_place});
          }
        }
        check<T>(ranks, variants[v], cases);
      });
    }
  }
}

TEST_CASE("reduce_scatter: blocks longer than a pipeline slice", "[reduce_scatter]") {
  for (const auto& variant : harness::variants(Collective::reduce_scatter)) {
    const std::size_t count = harness::slice_elements<float>() * 3 / 2 + 3;
    check<float>(3, variant, {{count, ReduceOp::sum, false}, {count, ReduceOp::min, true}});
  }
}

}  // namespace test_reduce_scatter
