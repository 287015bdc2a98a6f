// Team::set_ring_order: rings and chains follow a topology's order, results stay exact, bad orders
// are refused before any run.
#include <catch2/catch.hpp>

#include "harness.hpp"

#include <cstdint>
#include <vector>

namespace test_ring_order {

using chorus::Algorithm;
using chorus::ReduceOp;

namespace {

// Values of mixed magnitude, so float sums depend on the order they are added in.
float mixed(int rank, std::size_t i) {
  // 2^24 + 1 rounds back to 2^24 in float, so where the 1s meet the big values matters.
  constexpr float kValues[] = {16777216.0f, 1.0f, -16777216.0f, 1.0f, 3.0f, 1.0f};
  return kValues[(static_cast<std::size_t>(rank) + 2 * i) % 6];
}

int rank_at(const std::vector<int>& order, int position) {
  const int n = static_cast<int>(order.size());
  return order[static_cast<std::size_t>(((position % n) + n) % n)];
}

std::vector<int> identity(int n) {
  std::vector<int> order;
  for (int r = 0; r < n; ++r) order.push_back(r);
  return order;
}

// Ring all_reduce by its definition, count == ranks (one element per chunk): chunk e starts at ring
// position e and travels once around, each position adding its own value on the left.
std::vector<float> ring_sum(const std::vector<int>& order, const std::vector<int>& ranks_of) {
  const int n = static_cast<int>(order.size());
  std::vector<float> out(static_cast<std::size_t>(n));
  for (int e = 0; e < n; ++e) {
    const auto i = static_cast<std::size_t>(e);
    float acc = mixed(ranks_of[static_cast<std::size_t>(rank_at(order, e))], i);
    for (int j = 1; j < n; ++j) acc = mixed(ranks_of[static_cast<std::size_t>(rank_at(order, e + j))], i) + acc;
    out[i] = acc;
  }
  return out;
}

// Chain reduce by its definition: the far end of the chain sends its value, and each rank toward the
// root adds its own on the left.
std::vector<float> chain_sum(const std::vector<int>& order, int root, std::size_t count) {
  const int n = static_cast<int>(order.size());
  int start = 0;
  while (order[static_cast<std::size_t>(start)] != root) ++start;
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = mixed(rank_at(order, start + n - 1), i);
    for (int k = n - 2; k >= 0; --k) acc = mixed(rank_at(order, start + k), i) + acc;
    out[i] = acc;
  }
  return out;
}

}  // namespace

TEST_CASE("ring all_reduce and chain reduce fold in the team's ring order", "[host][ring_order]") {
  const std::vector<int> order = {0, 3, 1, 4, 2};
  const int n = 5;
  const std::vector<float> want_ring = ring_sum(order, identity(n));
  const std::vector<float> want_chain = chain_sum(order, 3, 64);
  // The inputs can tell the orders apart, so the checks below can fail.
  REQUIRE(want_ring != ring_sum(identity(n), identity(n)));
  REQUIRE(want_chain != chain_sum(identity(n), 3, 64));
  chorus::host::Team team(n);
  team.set_ring_order(order);
  std::vector<std::vector<float>> sums(n);
  std::vector<float> reduced;
  harness::run(team, [&](chorus::host::Comm& comm) {
    std::vector<float> data(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = mixed(comm.rank(), i);
    comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
    sums[static_cast<std::size_t>(comm.rank())] = data;
    std::vector<float> in(64), out(64);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = mixed(comm.rank(), i);
    comm.reduce(in.data(), out.data(), in.size(), ReduceOp::sum, 3, Algorithm::chain);
    if (comm.rank() == 3) reduced = out;
  });
  for (int r = 0; r < n; ++r) CHECK(sums[static_cast<std::size_t>(r)] == want_ring);
  CHECK(reduced == want_chain);
}

TEST_CASE("split communicators inherit the ring order restricted to their members", "[host][ring_order]") {
  const std::vector<int> order = {0, 3, 1, 4, 2, 5};
  chorus::host::Team team(6);
  team.set_ring_order(order);
  // Evens (0, 2, 4) meet on the team's ring as 0, 4, 2; odds (1, 3, 5) as 3, 1, 5.
  const std::vector<int> even_order = {0, 2, 1}, odd_order = {1, 0, 2};
  const std::vector<int> evens = {0, 2, 4}, odds = {1, 3, 5};
  REQUIRE(ring_sum(even_order, evens) != ring_sum(identity(3), evens));
  std::vector<std::vector<int>> orders(6);
  std::vector<std::vector<float>> sums(6);
  harness::run(team, [&](chorus::host::Comm& comm) {
    chorus::host::Comm half = comm.split(comm.rank() % 2, comm.rank());
    orders[static_cast<std::size_t>(comm.rank())] = half.ring_order();
    std::vector<float> data(3);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = mixed(comm.rank(), i);
    half.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
    sums[static_cast<std::size_t>(comm.rank())] = data;
  });
  for (int r = 0; r < 6; ++r) {
    INFO("team rank " << r);
    CHECK(orders[static_cast<std::size_t>(r)] == (r % 2 == 0 ? even_order : odd_order));
    CHECK(sums[static_cast<std::size_t>(r)] == (r % 2 == 0 ? ring_sum(even_order, evens) : ring_sum(odd_order, odds)));
  }
}

TEST_CASE("a team runs ring all_reduce and chain broadcast over a custom ring order", "[host][ring_order]") {
  chorus::host::Team team(5);
  team.set_ring_order({0, 3, 1, 4, 2});
  REQUIRE(team.ring_order() == std::vector<int>{0, 3, 1, 4, 2});
  const std::size_t count = 1031;  // prime: uneven chunks
  std::vector<std::vector<std::int64_t>> sums(5), copies(5);
  team.run([&](chorus::host::Comm& comm) {
    std::vector<std::int64_t> data(count);
    for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<std::int64_t>(i) * (comm.rank() + 1);
    comm.all_reduce(data.data(), data.data(), count, ReduceOp::sum, Algorithm::ring);
    sums[comm.rank()] = data;
    std::vector<std::int64_t> block(count, comm.rank() == 2 ? 7 : -1);
    comm.broadcast(block.data(), block.data(), count, 2, Algorithm::chain);
    copies[comm.rank()] = block;
  });
  for (int r = 0; r < 5; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      REQUIRE(sums[r][i] == static_cast<std::int64_t>(i) * 15);
      REQUIRE(copies[r][i] == 7);
    }
  }
  team.set_ring_order({});
  REQUIRE(team.ring_order().empty());
}

TEST_CASE("set_ring_order refuses what is not a permutation of the team", "[host][ring_order]") {
  chorus::host::Team team(4);
  CHECK_THROWS_WITH(team.set_ring_order({0, 1, 2}), Catch::Contains("3 entries for a team of 4"));
  CHECK_THROWS_WITH(team.set_ring_order({0, 1, 1, 2}), Catch::Contains("entry 2 is 1"));
  CHECK_THROWS_WITH(team.set_ring_order({0, 1, 2, 4}), Catch::Contains("entry 3 is 4"));
  CHECK_THROWS_AS(team.set_ring_order({-1, 0, 1, 2}), chorus::Error);
  CHECK(team.ring_order().empty());  // unchanged by the refused orders
}

}  // namespace test_ring_order
