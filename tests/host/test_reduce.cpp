// reduce on the host backend: automatic, chain and binomial x rank counts 1..9 and 16 x roots x
// awkward counts x types x ops; out of place (non-roots pass a null recv), in place, and mixed.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_reduce {

namespace {

using chorus::ReduceOp;
using chorus::Collective;
using chorus::host::Comm;
using chorus::host::Team;

template <class T>
void reduce(Comm& comm, const harness::Variant& v, const T* send, T* recv, std::size_t count, ReduceOp op, int root) {
  comm.reduce(send, recv, count, op, root, v.algorithm);
}

enum class Mode { out_of_place, in_place, mixed };
const char* to_string(Mode mode) {
  return mode == Mode::out_of_place ? "out of place" : mode == Mode::in_place ? "in place" : "mixed";
}

struct Case {
  std::size_t count;
  ReduceOp op;
  int root;
  Mode mode;
};

template <class T>
void check(int ranks, const harness::Variant& variant, const std::vector<Case>& cases) {
  Team team(ranks);
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::vector<std::vector<T>>> got(cases.size(), std::vector<std::vector<T>>(n));
  std::vector<std::vector<char>> untouched(cases.size(), std::vector<char>(n, 1));
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Case& k = cases[c];
      std::vector<T> in = harness::inputs<T>(k.op, r, k.count);
      const std::vector<T> original = in;
      if (k.mode == Mode::in_place || (k.mode == Mode::mixed && r != k.root)) {
        reduce(comm, variant, in.data(), in.data(), k.count, k.op, k.root);
        if (r == k.root) {
          got[c][static_cast<std::size_t>(r)] = in;
        } else {
          untouched[c][static_cast<std::size_t>(r)] = harness::same_bits(in, original);
        }
      } else {
        std::vector<T> out(k.count, harness::sentinel<T>());
        reduce(comm, variant, in.data(), r == k.root ? out.data() : nullptr, k.count, k.op, k.root);
        if (r == k.root) got[c][static_cast<std::size_t>(r)] = out;
        untouched[c][static_cast<std::size_t>(r)] = harness::same_bits(in, original);
      }
    }
  });
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    const std::vector<T> expected = harness::reference<T>(k.op, ranks, k.count);
    for (std::size_t r = 0; r < n; ++r) {
      INFO(harness::type_name<T>() << " " << chorus::to_string(k.op) << " " << variant.name() << " ranks " << ranks
                                   << " root " << k.root << " count " << k.count << " " << to_string(k.mode)
                                   << " rank " << r << ": got " << harness::show(got[c][r]) << " expected "
                                   << harness::show(expected));
      if (static_cast<int>(r) == k.root) CHECK(harness::same_bits(got[c][r], expected));
      CHECK(untouched[c][r]);
    }
  }
}

}  // namespace

TEST_CASE("reduce: every pattern, rank count, root, count, type and op", "[reduce]") {
  const auto variants = harness::variants(Collective::reduce);
  for (int ranks : harness::rank_counts()) {
    const auto counts = harness::awkward_counts(ranks);
    const std::vector<int> roots = ranks > 2 ? std::vector<int>{0, ranks / 2, ranks - 1}
                                             : ranks == 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
    for (std::size_t v = 0; v < variants.size(); ++v) {
      harness::for_each_type([&](auto type, int type_index) {
        using T = decltype(type);
        std::vector<Case> cases;
        for (std::size_t c = 0; c < counts.size(); ++c) {
          for (int o = 0; o < 5; ++o) {
            if (!harness::sampled(ranks, c, type_index, o, static_cast<int>(v))) continue;
            for (int root : roots) {
              for (Mode mode : {Mode::out_of_place, Mode::in_place, Mode::mixed}) {
                cases.push_back(Case{counts[c], harness::kOps[o], root, mode});
              }
            }
          }
        }
        check<T>(ranks, variants[v], cases);
      });
    }
  }
}

TEST_CASE("reduce: messages longer than a pipeline slice", "[reduce]") {
  for (const auto& variant : harness::variants(Collective::reduce)) {
    const std::size_t count = harness::slice_elements<float>() * 5 / 2 + 1;
    check<float>(4, variant, {{count, ReduceOp::sum, 1, Mode::out_of_place}, {count, ReduceOp::max, 3, Mode::in_place}});
  }
}

}  // namespace test_reduce
