// broadcast on the host backend: automatic, chain and binomial x rank counts 1..9 and 16 x roots
// x awkward counts x types, out of place (non-roots pass a null send), in place, and mixed.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace test_broadcast {

namespace {

using chorus::ReduceOp;
using chorus::Collective;
using chorus::host::Comm;
using chorus::host::Team;

template <class T>
void broadcast(Comm& comm, const harness::Variant& v, const T* send, T* recv, std::size_t count, int root) {
  comm.broadcast(send, recv, count, root, v.algorithm);
}

std::vector<int> roots(int ranks) {
  std::vector<int> list = {0};
  if (ranks > 2) list.push_back(ranks / 2);
  if (ranks > 1) list.push_back(ranks - 1);
  return list;
}

enum class Mode { out_of_place, in_place, mixed };
const char* to_string(Mode mode) {
  return mode == Mode::out_of_place ? "out of place" : mode == Mode::in_place ? "in place" : "mixed";
}

template <class T>
void check(int ranks, const harness::Variant& variant, const std::vector<std::size_t>& counts) {
  Team team(ranks);
  const auto n = static_cast<std::size_t>(ranks);
  const std::vector<int> root_list = roots(ranks);
  const Mode modes[] = {Mode::out_of_place, Mode::in_place, Mode::mixed};
  std::vector<std::vector<T>> got(counts.size() * root_list.size() * 3 * n);
  const auto slot = [&](std::size_t c, std::size_t root_index, std::size_t mode, std::size_t r) {
    return ((c * root_list.size() + root_index) * 3 + mode) * n + r;
  };
  harness::run(team, [&](Comm& comm) {
    const int r = comm.rank();
    for (std::size_t c = 0; c < counts.size(); ++c) {
      const std::size_t count = counts[c];
      for (std::size_t ri = 0; ri < root_list.size(); ++ri) {
        const int root = root_list[ri];
        for (std::size_t m = 0; m < 3; ++m) {
          const Mode mode = modes[m];
          const std::vector<T> data = harness::inputs<T>(ReduceOp::min, root + 1, count);
          std::vector<T> buffer(count, harness::sentinel<T>());
          if (r == root && mode != Mode::out_of_place) buffer = data;
          const std::vector<T> ignored(count, harness::sentinel<T>());
          if (r == root) {
            broadcast(comm, variant, mode == Mode::out_of_place ? data.data() : buffer.data(), buffer.data(), count,
                      root);
          } else {
            const T* send = mode == Mode::out_of_place ? nullptr : mode == Mode::in_place ? buffer.data() : ignored.data();
            broadcast(comm, variant, send, buffer.data(), count, root);
          }
          got[slot(c, ri, m, static_cast<std::size_t>(r))] = std::move(buffer);
        }
      }
    }
  });
  for (std::size_t c = 0; c < counts.size(); ++c) {
    for (std::size_t ri = 0; ri < root_list.size(); ++ri) {
      const std::vector<T> expected = harness::inputs<T>(ReduceOp::min, root_list[ri] + 1, counts[c]);
      for (std::size_t m = 0; m < 3; ++m) {
        for (std::size_t r = 0; r < n; ++r) {
          const std::vector<T>& result = got[slot(c, ri, m, r)];
          INFO(harness::type_name<T>() << " " << variant.name() << " ranks " << ranks << " root " << root_list[ri]
                                       << " count " << counts[c] << " " << to_string(modes[m]) << " rank " << r
                                       << ": got " << harness::show(result) << " expected " << harness::show(expected));
          CHECK(harness::same_bits(result, expected));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("broadcast: every pattern, rank count, root, count and type", "[broadcast]") {
  for (int ranks : harness::rank_counts()) {
    for (const auto& variant : harness::variants(Collective::broadcast)) {
      harness::for_each_type([&](auto type, int) { check<decltype(type)>(ranks, variant, harness::awkward_counts(ranks)); });
    }
  }
}

TEST_CASE("broadcast: messages longer than a pipeline slice", "[broadcast]") {
  for (const auto& variant : harness::variants(Collective::broadcast)) {
    check<double>(4, variant, {harness::slice_elements<double>() * 5 / 2 + 1});
  }
}

}  // namespace test_broadcast
