// Ring all_reduce, reduce_scatter and all_gather: ring index arithmetic, the 2(n-1) steps per
// slice, neighbours-only traffic in the given ring order, bandwidth-optimal volume, and errors.
#include <chorus/algo/ring.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <set>
#include <vector>

namespace test_ring {

namespace {

using namespace chorus::algo;
using namespace chorus::algo::testing;

// Compile-time use is the proof these can run in a kernel's index math.
static_assert(ring_reduce_send_chunk(0, 0, 4) == 0);
static_assert(ring_reduce_recv_chunk(0, 0, 4) == 3);
static_assert(ring_gather_send_chunk(3, 0, 4) == 0);

// Every rank in `order` talks only to its ring neighbours: sends go to the next, recvs come from
// the previous position.
void check_neighbours_only(const Schedule& schedule, const std::vector<int>& order) {
  const int n = static_cast<int>(order.size());
  for (int p = 0; p < n; ++p) {
    for (const Step& step : schedule.steps[order[p]]) {
      if (step.op == Op::send) CHECK(step.peer == order[(p + 1) % n]);
      if (is_recv(step.op)) CHECK(step.peer == order[(p + n - 1) % n]);
    }
  }
}

}  // namespace

TEST_CASE("ring chunk arithmetic forwards what it received and finishes chunk p+1") {
  for (int n = 2; n <= 12; ++n) {
    for (int p = 0; p < n; ++p) {
      const int prev = mod(p - 1, n);
      std::set<int> gathered;
      for (int k = 0; k < n - 1; ++k) {
        // What this position receives is what its predecessor sends at the same step.
        CHECK(ring_reduce_recv_chunk(p, k, n) == ring_reduce_send_chunk(prev, k, n));
        CHECK(ring_gather_recv_chunk(p, k, n) == ring_gather_send_chunk(prev, k, n));
        if (k + 1 < n - 1) {
          CHECK(ring_reduce_send_chunk(p, k + 1, n) == ring_reduce_recv_chunk(p, k, n));
          CHECK(ring_gather_send_chunk(p, k + 1, n) == ring_gather_recv_chunk(p, k, n));
        }
        gathered.insert(ring_gather_recv_chunk(p, k, n));
      }
      CHECK(ring_reduce_recv_chunk(p, n - 2, n) == mod(p + 1, n));  // the finished chunk
      CHECK(ring_gather_send_chunk(p, 0, n) == mod(p + 1, n));
      CHECK(gathered.size() == static_cast<std::size_t>(n - 1));
      CHECK(gathered.count(mod(p + 1, n)) == 0);
    }
  }
}

TEST_CASE("ring all_reduce takes 2(n-1) communication steps per slice on every rank") {
  for (int n = 1; n <= 9; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{100}}) {
      for (const std::size_t slice : {std::size_t{0}, std::size_t{4}}) {
        Options options;
        options.slice = slice;
        const Schedule schedule = ring_all_reduce(n, count, options);
        const int slices = static_cast<int>(slice_count(chunk_range(count, n, 0).count, slice));
        INFO("n " << n << " count " << count << " slice " << slice);
        CHECK(schedule.scratch_count == 0);
        for (int rank = 0; rank < n; ++rank) {
          CHECK(count_ops(schedule.steps[rank], Op::send) == 2 * (n - 1) * slices);
          CHECK(count_recvs(schedule.steps[rank]) == 2 * (n - 1) * slices);
          CHECK(count_ops(schedule.steps[rank], Op::recv_reduce) == (n - 1) * slices);
        }
        // Each chunk crosses n-1 links while reducing and n-1 while gathering.
        CHECK(elements_sent(schedule) == 2 * static_cast<std::size_t>(n - 1) * count);
        check_verified(schedule);
      }
    }
  }
}

TEST_CASE("one rank's ring all_reduce is a single copy") {
  const Schedule schedule = ring_all_reduce(1, 5);
  REQUIRE(schedule.steps[0].size() == 1);
  CHECK(schedule.steps[0][0].op == Op::copy);
  CHECK(schedule.steps[0][0].count == 5);
}

TEST_CASE("ring schedules follow Options::ring_order") {
  Options options;
  options.ring_order = {3, 0, 5, 1, 4, 2};
  options.slice = 2;
  for (const bool in_place : {false, true}) {
    options.in_place = in_place;
    for (const Schedule& schedule :
         {ring_all_reduce(6, 23, options), ring_reduce_scatter(6, 5, options), ring_all_gather(6, 5, options)}) {
      check_neighbours_only(schedule, options.ring_order);
      check_verified(schedule);
    }
  }
}

TEST_CASE("ring reduce_scatter and all_gather take n-1 steps and move (n-1) blocks per rank") {
  for (int n = 1; n <= 9; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{10}}) {
      for (const bool in_place : {false, true}) {
        Options options;
        options.in_place = in_place;
        const Schedule scatter = ring_reduce_scatter(n, count, options);
        const Schedule gather = ring_all_gather(n, count, options);
        INFO("n " << n << " count " << count << " in place " << in_place);
        for (int rank = 0; rank < n; ++rank) {
          CHECK(count_ops(scatter.steps[rank], Op::send) == n - 1);
          CHECK(count_ops(scatter.steps[rank], Op::recv_reduce) == n - 1);
          CHECK(count_ops(gather.steps[rank], Op::send) == n - 1);
          CHECK(count_ops(gather.steps[rank], Op::recv_copy) == n - 1);
        }
        const auto volume = static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) * count;
        CHECK(elements_sent(scatter) == volume);
        CHECK(elements_sent(gather) == volume);
        CHECK(scatter.scratch_count <= 2 * count);  // a double buffer of partial sums, no more
        check_verified(scatter);
        check_verified(gather);
      }
    }
  }
}

TEST_CASE("ring generators reject bad arguments") {
  using chorus::ErrorCode;
  const auto code_of = [](auto&& make) {
    try {
      make();
    } catch (const chorus::Error& error) {
      return error.code();
    }
    return ErrorCode::internal;
  };
  CHECK(code_of([] { ring_all_reduce(0, 4); }) == ErrorCode::invalid_argument);
  CHECK(code_of([] { ring_all_gather(-3, 4); }) == ErrorCode::invalid_argument);
  Options short_order;
  short_order.ring_order = {0, 1};
  CHECK(code_of([&] { ring_all_reduce(3, 4, short_order); }) == ErrorCode::invalid_argument);
  Options repeated;
  repeated.ring_order = {0, 1, 1};
  CHECK(code_of([&] { ring_reduce_scatter(3, 4, repeated); }) == ErrorCode::invalid_argument);
  Options out_of_range;
  out_of_range.ring_order = {0, 3, 1};
  CHECK(code_of([&] { ring_all_gather(3, 4, out_of_range); }) == ErrorCode::invalid_argument);
  CHECK_THROWS_WITH(ring_all_reduce(3, 4, repeated),
                    Catch::Matchers::Contains("ring_all_reduce") && Catch::Matchers::Contains("permutation"));
}

}  // namespace test_ring
