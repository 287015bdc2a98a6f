// Pipelined chain broadcast and reduce: the chain starts at the root and follows the ring order,
// every slice moves one link per step, and the buffer rules for non-roots hold.
#include <chorus/algo/chain.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

namespace test_chain {

using namespace chorus::algo;
using namespace chorus::algo::testing;

TEST_CASE("chain broadcast and reduce follow the ring order from the root") {
  Options options;
  options.ring_order = {4, 2, 0, 3, 1};
  options.slice = 3;
  const std::size_t count = 10;  // 4 slices
  for (int root = 0; root < 5; ++root) {
    const Schedule broadcast = chain_broadcast(5, count, root, options);
    const Schedule reduce = chain_reduce(5, count, root, options);
    int position = 0;
    while (options.ring_order[position] != root) ++position;
    for (int i = 0; i < 5; ++i) {
      const int rank = options.ring_order[(position + i) % 5];
      const int next = options.ring_order[(position + i + 1) % 5];
      const int prev = options.ring_order[(position + i + 4) % 5];
      INFO("root " << root << " rank " << rank);
      for (const Step& step : broadcast.steps[rank]) {
        if (step.op == Op::send) CHECK(step.peer == next);
        if (is_recv(step.op)) CHECK(step.peer == prev);
      }
      for (const Step& step : reduce.steps[rank]) {
        if (step.op == Op::send) CHECK(step.peer == prev);
        if (is_recv(step.op)) CHECK(step.peer == next);
      }
      // The end of the chain only receives (broadcast) or only sends (reduce).
      CHECK(count_ops(broadcast.steps[rank], Op::send) == (i == 4 ? 0 : 4));
      CHECK(count_recvs(reduce.steps[rank]) == (i == 4 ? 0 : 4));
    }
    check_verified(broadcast);
    check_verified(reduce);
  }
}

TEST_CASE("chain reduce keeps non-root partial sums out of the output") {
  for (int n = 1; n <= 9; ++n) {
    for (const bool in_place : {false, true}) {
      Options options;
      options.in_place = in_place;
      const int root = n / 2;
      const Schedule schedule = chain_reduce(n, 7, root, options);
      for (int rank = 0; rank < n; ++rank) {
        if (rank == root) continue;
        for (const Step& step : schedule.steps[rank]) {
          CHECK(step.src.buffer != Buffer::output);
          if (writes(step.op)) CHECK(step.dst.buffer == Buffer::scratch);
        }
      }
      check_verified(schedule);
      check_verified(chain_broadcast(n, 7, root, options));
    }
  }
}

TEST_CASE("chain generators reject a root outside the ranks") {
  CHECK_THROWS_AS(chain_broadcast(4, 8, 4), chorus::Error);
  CHECK_THROWS_AS(chain_reduce(4, 8, -1), chorus::Error);
}

}  // namespace test_chain
