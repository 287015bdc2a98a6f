// barrier: no rank leaves round k before every rank has entered it.
#include <catch2/catch.hpp>

#include <atomic>

#include "harness.hpp"

namespace test_barrier {

namespace {

using chorus::host::Comm;
using chorus::host::Team;

}  // namespace

TEST_CASE("no rank passes a barrier before every rank reached it", "[barrier]") {
  for (int ranks : {1, 2, 3, 5, 8, 16}) {
    Team team(ranks);
    const int rounds = 50;
    std::atomic<int> arrived{0};
    std::vector<int> early(static_cast<std::size_t>(ranks), 0);
    harness::run(team, [&](Comm& c) {
      for (int round = 1; round <= rounds; ++round) {
        arrived.fetch_add(1);
        c.barrier();
        // Everyone has arrived at this round; nobody can be two rounds ahead.
        const int now = arrived.load();
        if (now < round * ranks || now > (round + 1) * ranks) ++early[static_cast<std::size_t>(c.rank())];
        c.barrier();
      }
    });
    INFO("ranks " << ranks);
    for (int e : early) CHECK(e == 0);
  }
}

TEST_CASE("barriers interleave with collectives on the same sequence", "[barrier]") {
  Team team(4);
  std::vector<std::int64_t> sums(4);
  harness::run(team, [&](Comm& c) {
    std::int64_t total = 0;
    for (int i = 0; i < 30; ++i) {
      std::int64_t x = c.rank() + i;
      std::int64_t s = 0;
      if (i % 3 == 0) c.barrier();
      c.all_reduce(&x, &s, 1, chorus::ReduceOp::sum);
      total += s;
    }
    sums[static_cast<std::size_t>(c.rank())] = total;
  });
  std::int64_t expected = 0;
  for (int i = 0; i < 30; ++i) expected += 6 + 4 * i;
  for (std::int64_t s : sums) CHECK(s == expected);
}

}  // namespace test_barrier
