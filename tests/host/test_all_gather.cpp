// all_gather on the host backend: automatic, ring and direct x rank counts 1..9 and 16 x awkward
// counts x types, in place (send == recv + rank*count) and out of place.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_all_gather {

namespace {

using chorus::ReduceOp;
using chorus::Collective;
using chorus::host::Comm;
using chorus::host::Team;

template <class T>
void all_gather(Comm& comm, const harness::Variant& v, const T* send, T* recv, std::size_t count) {
  comm.all_gather(send, recv, count, v.algorithm);
}

// Rank r's block: distinct per rank where the type allows, so a misplaced block shows.
template <class T>
std::vector<T> block(int rank, std::size_t count) {
  return harness::inputs<T>(ReduceOp::min, rank, count, static_cast<std::size_t>(rank) * 3);
}

template <class T>
void check(int ranks, const harness::Variant& variant, const std::vector<std::size_t>& counts) {
  Team team(ranks);
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::vector<std::vector<T>>> got(counts.size() * 2, std::vector<std::vector<T>>(n));
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    for (std::size_t c = 0; c < counts.size(); ++c) {
      const std::size_t count = counts[c];
      const std::vector<T> in = block<T>(r, count);
      std::vector<T> out(count * n, harness::sentinel<T>());
      all_gather(comm, variant, in.data(), out.data(), count);
      got[2 * c][static_cast<std::size_t>(r)] = out;
      std::vector<T> shared(count * n, harness::sentinel<T>());
      std::copy(in.begin(), in.end(), shared.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count));
      all_gather(comm, variant, shared.data() + static_cast<std::size_t>(r) * count, shared.data(), count);
      got[2 * c + 1][static_cast<std::size_t>(r)] = shared;
    }
  });
  for (std::size_t c = 0; c < counts.size(); ++c) {
    std::vector<T> expected;
    for (int q = 0; q < ranks; ++q) {
      const std::vector<T> part = block<T>(q, counts[c]);
      expected.insert(expected.end(), part.begin(), part.end());
    }
    for (int in_place = 0; in_place < 2; ++in_place) {
      for (std::size_t r = 0; r < n; ++r) {
        const std::vector<T>& result = got[2 * c + static_cast<std::size_t>(in_place)][r];
        INFO(harness::type_name<T>() << " " << variant.name() << " ranks " << ranks << " count " << counts[c]
                                     << (in_place ? " in place" : "") << " rank " << r << ": got "
                                     << harness::show(result) << " expected " << harness::show(expected));
        CHECK(harness::same_bits(result, expected));
      }
    }
  }
}

}  // namespace

TEST_CASE("all_gather: every pattern, rank count, count and type", "[all_gather]") {
  for (int ranks : harness::rank_counts()) {
    for (const auto& variant : harness::variants(Collective::all_gather)) {
      harness::for_each_type([&](auto type, int) { check<decltype(type)>(ranks, variant, harness::awkward_counts(ranks)); });
    }
  }
}

TEST_CASE("all_gather: blocks longer than a pipeline slice", "[all_gather]") {
  for (const auto& variant : harness::variants(Collective::all_gather)) {
    check<float>(3, variant, {harness::slice_elements<float>() * 3 / 2 + 3});
  }
  check<std::uint8_t>(2, harness::Variant{chorus::Algorithm::ring}, {harness::slice_elements<std::uint8_t>() + 1});
}

}  // namespace test_all_gather
