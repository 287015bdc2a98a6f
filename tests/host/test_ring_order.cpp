// Team::set_ring_order: rings and chains follow a topology's order, results stay exact, bad orders
// are refused before any run.
#include <catch2/catch.hpp>

#include <chorus/host.hpp>

#include <cstdint>
#include <vector>

using chorus::Algorithm;
using chorus::ReduceOp;

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
    comm.broadcast(block.data(), block.data(), count, 2);
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
