// all_to_all on the host backend: rank counts 1..9 and 16 x awkward counts x types, in place and
// out of place. Block j of rank r's input ends up as block r of rank j's output.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_all_to_all {

namespace {

using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

// What rank `from` sends to rank `to`: distinct per pair where the type allows.
template <class T>
std::vector<T> message(int from, int to, std::size_t count) {
  return harness::inputs<T>(ReduceOp::min, from * 17 + to, count, static_cast<std::size_t>(to));
}

template <class T>
void check(int ranks, const std::vector<std::size_t>& counts) {
  Team team(ranks);
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::vector<std::vector<T>>> got(counts.size() * 2, std::vector<std::vector<T>>(n));
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    for (std::size_t c = 0; c < counts.size(); ++c) {
      const std::size_t count = counts[c];
      std::vector<T> in;
      for (int to = 0; to < ranks; ++to) {
        const std::vector<T> part = message<T>(r, to, count);
        in.insert(in.end(), part.begin(), part.end());
      }
      std::vector<T> out(count * n, harness::sentinel<T>());
      comm.all_to_all(in.data(), out.data(), count);
      got[2 * c][static_cast<std::size_t>(r)] = std::move(out);
      comm.all_to_all(in.data(), in.data(), count);
      got[2 * c + 1][static_cast<std::size_t>(r)] = std::move(in);
    }
  });
  for (std::size_t c = 0; c < counts.size(); ++c) {
    for (std::size_t r = 0; r < n; ++r) {
      std::vector<T> expected;
      for (int from = 0; from < ranks; ++from) {
        const std::vector<T> part = message<T>(from, static_cast<int>(r), counts[c]);
        expected.insert(expected.end(), part.begin(), part.end());
      }
      for (int in_place = 0; in_place < 2; ++in_place) {
        const std::vector<T>& result = got[2 * c + static_cast<std::size_t>(in_place)][r];
        INFO(harness::type_name<T>() << " ranks " << ranks << " count " << counts[c] << (in_place ? " in place" : "")
                                     << " rank " << r << ": got " << harness::show(result) << " expected "
                                     << harness::show(expected));
        CHECK(harness::same_bits(result, expected));
      }
    }
  }
}

}  // namespace

TEST_CASE("all_to_all: every rank count, count and type, in place and out of place", "[all_to_all]") {
  for (int ranks : harness::rank_counts()) {
    harness::for_each_type([&](auto type, int) { check<decltype(type)>(ranks, harness::awkward_counts(ranks)); });
  }
}

TEST_CASE("all_to_all: blocks longer than a pipeline slice", "[all_to_all]") {
  check<float>(3, {harness::slice_elements<float>() * 3 / 2 + 1});
}

}  // namespace test_all_to_all
