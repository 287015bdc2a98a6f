// The generators' shared building blocks: step builders, argument checks, the ring order and the
// rank-order fold.
#include <chorus/algo/steps.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <limits>
#include <vector>

namespace test_steps {

using namespace chorus::algo;
using namespace chorus::algo::testing;
using Catch::Matchers::Contains;

TEST_CASE("StepList appends one step per call with the operands in place") {
  std::vector<Step> steps;
  StepList list(steps);
  list.send(2, 4, input_at(8));
  list.recv_reduce(1, 3, input_at(0), output_at(5));
  list.reduce(6, scratch_at(1), output_at(2));
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].op == Op::send);
  CHECK(steps[0].peer == 2);
  CHECK(steps[0].src.buffer == Buffer::input);
  CHECK(steps[0].src.offset == 8);
  CHECK(steps[1].op == Op::recv_reduce);
  CHECK(steps[1].src.buffer == Buffer::input);
  CHECK(steps[1].dst.offset == 5);
  CHECK(steps[2].op == Op::reduce);
  CHECK(steps[2].peer == -1);
  CHECK(steps[2].src.buffer == Buffer::scratch);
  CHECK(steps[2].dst.buffer == Buffer::output);
}

TEST_CASE("make_schedule checks ranks, root and size overflow") {
  const Options options;
  const Schedule schedule = make_schedule("test", Collective::reduce, Pattern::chain, 3, 10, 2, options);
  CHECK(schedule.steps.size() == 3);
  CHECK(schedule.root == 2);
  CHECK_THROWS_WITH(make_schedule("test", Collective::all_reduce, Pattern::ring, 0, 1, 0, options),
                    Contains("chorus::algo::test") && Contains("ranks"));
  CHECK_THROWS_WITH(make_schedule("test", Collective::broadcast, Pattern::chain, 4, 1, 4, options),
                    Contains("root 4"));
  CHECK_THROWS_WITH(make_schedule("test", Collective::reduce, Pattern::chain, 4, 1, -1, options),
                    Contains("root -1"));
  CHECK_THROWS_WITH(make_schedule("test", Collective::all_gather, Pattern::ring, 4,
                                  std::numeric_limits<std::size_t>::max() / 2, 0, options),
                    Contains("overflows"));
  // Non-rooted collectives ignore the root argument.
  CHECK_NOTHROW(make_schedule("test", Collective::all_reduce, Pattern::ring, 2, 1, 7, options));
}

TEST_CASE("Ring maps positions to ranks and back, wrapping around") {
  const Ring identity("test", 4, {});
  CHECK(identity.rank_at(0) == 0);
  CHECK(identity.rank_at(-1) == 3);
  CHECK(identity.rank_at(5) == 1);
  const Ring ring("test", 4, {2, 0, 3, 1});
  for (int p = 0; p < 4; ++p) CHECK(ring.position_of(ring.rank_at(p)) == p);
  CHECK(ring.rank_at(4) == 2);
  CHECK_THROWS_WITH(Ring("test", 3, {0, 1}), Contains("ring_order has 2 entries for 3 ranks"));
  CHECK_THROWS_WITH(Ring("test", 3, {0, 2, 2}), Contains("permutation"));
  CHECK_THROWS_WITH(Ring("test", 3, {0, -1, 2}), Contains("permutation"));
}

TEST_CASE("fold_in_rank_order gives every rank the same expression") {
  // n ranks, each sends its one element to every peer and folds: a one-shot all_reduce.
  for (int n = 1; n <= 6; ++n) {
    Schedule schedule = make_schedule("test", Collective::all_reduce, Pattern::one_shot, n, 1, 0, Options{});
    for (int rank = 0; rank < n; ++rank) {
      StepList list(schedule.steps[rank]);
      for (int peer = 0; peer < n; ++peer) {
        if (peer != rank) list.send(peer, 1, input_at(0));
      }
      fold_in_rank_order(list, rank, n, 1, input_at(0), output_at(0));
      // Rank 0 starts from its own value, the others receive rank 0's first.
      const Step& first = schedule.steps[rank][static_cast<std::size_t>(n - 1)];
      CHECK(first.op == (rank == 0 ? Op::copy : Op::recv_copy));
      CHECK(count_ops(schedule.steps[rank], Op::reduce) == (rank == 0 ? 0 : 1));
    }
    link(schedule);
    check_verified(schedule);  // the verifier rejects differing expressions across ranks
  }
}

}  // namespace test_steps
