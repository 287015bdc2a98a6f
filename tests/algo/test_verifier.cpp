// The verifier accepts hand-built correct schedules and rejects each kind of broken one with a
// message that names the rank and step (or element) at fault. It must never crash or hang.
#include <chorus/algo/chunking.hpp>
#include <chorus/algo/verifier.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace test_verifier {

namespace {

using namespace chorus::algo;
using Catch::Matchers::Contains;

constexpr Buffer in = Buffer::input;
constexpr Buffer out = Buffer::output;
constexpr Buffer scr = Buffer::scratch;

Step send(int peer, Buffer buffer, std::size_t offset, std::size_t count) {
  Step step;
  step.op = Op::send;
  step.peer = peer;
  step.count = count;
  step.src = {buffer, offset};
  return step;
}

Step recv(int peer, Buffer buffer, std::size_t offset, std::size_t count) {
  Step step;
  step.op = Op::recv_copy;
  step.peer = peer;
  step.count = count;
  step.dst = {buffer, offset};
  return step;
}

// dst = local + peer's data
Step recv_reduce(int peer, Span local, Span dst, std::size_t count) {
  Step step;
  step.op = Op::recv_reduce;
  step.peer = peer;
  step.count = count;
  step.src = local;
  step.dst = dst;
  return step;
}

Step copy(Span src, Span dst, std::size_t count) {
  Step step;
  step.op = Op::copy;
  step.count = count;
  step.src = src;
  step.dst = dst;
  return step;
}

// dst = dst + src
Step local_reduce(Span dst, Span src, std::size_t count) {
  Step step;
  step.op = Op::reduce;
  step.count = count;
  step.src = src;
  step.dst = dst;
  return step;
}

Schedule make(Collective collective, std::size_t count, std::vector<std::vector<Step>> steps, int root = 0,
              std::size_t scratch = 0) {
  Schedule schedule;
  schedule.collective = collective;
  schedule.ranks = static_cast<int>(steps.size());
  schedule.count = count;
  schedule.root = root;
  schedule.scratch_count = scratch;
  schedule.steps = std::move(steps);
  link(schedule);
  return schedule;
}

// 2-rank ring all_reduce of 4 elements: rank 0 reduces [0,2), rank 1 reduces [2,4), then they swap.
Schedule ring2() {
  return make(Collective::all_reduce, 4,
              {{send(1, in, 2, 2), recv_reduce(1, {in, 0}, {out, 0}, 2), send(1, out, 0, 2), recv(1, out, 2, 2)},
               {send(0, in, 0, 2), recv_reduce(0, {in, 2}, {out, 2}, 2), send(0, out, 2, 2), recv(0, out, 0, 2)}});
}

// 3-rank ring all_reduce of 3 elements (element k is chunk k), written out step by step.
Schedule ring3() {
  return make(Collective::all_reduce, 3,
              {{send(1, in, 0, 1), recv_reduce(2, {in, 2}, {out, 2}, 1), send(1, out, 2, 1),
                recv_reduce(2, {in, 1}, {out, 1}, 1), send(1, out, 1, 1), recv(2, out, 0, 1), send(1, out, 0, 1),
                recv(2, out, 2, 1)},
               {send(2, in, 1, 1), recv_reduce(0, {in, 0}, {out, 0}, 1), send(2, out, 0, 1),
                recv_reduce(0, {in, 2}, {out, 2}, 1), send(2, out, 2, 1), recv(0, out, 1, 1), send(2, out, 1, 1),
                recv(0, out, 0, 1)},
               {send(0, in, 2, 1), recv_reduce(1, {in, 1}, {out, 1}, 1), send(0, out, 1, 1),
                recv_reduce(1, {in, 0}, {out, 0}, 1), send(0, out, 0, 1), recv(1, out, 2, 1), send(0, out, 2, 1),
                recv(1, out, 1, 1)}});
}

// Any n, any count: ring reduce-scatter then ring all-gather, chunks from chunk_range.
Schedule ring(int n, std::size_t count, bool in_place = false) {
  std::vector<std::vector<Step>> steps(n);
  const auto chunk = [&](int k) { return chunk_range(count, n, static_cast<std::size_t>(mod(k, n))); };
  for (int r = 0; r < n; ++r) {
    auto& mine = steps[r];
    const int next = mod(r + 1, n);
    const int prev = mod(r - 1, n);
    if (n == 1 && !in_place) mine.push_back(copy({in, 0}, {out, 0}, count));
    for (int s = 0; s + 1 < n; ++s) {
      const Range sent = chunk(r - s);
      const Range got = chunk(r - s - 1);
      mine.push_back(send(next, s == 0 ? in : out, sent.offset, sent.count));
      mine.push_back(recv_reduce(prev, {in, got.offset}, {out, got.offset}, got.count));
    }
    for (int s = 0; s + 1 < n; ++s) {
      const Range sent = chunk(r + 1 - s);
      const Range got = chunk(r - s);
      mine.push_back(send(next, out, sent.offset, sent.count));
      mine.push_back(recv(prev, out, got.offset, got.count));
    }
  }
  Schedule schedule = make(Collective::all_reduce, count, std::move(steps));
  schedule.in_place = in_place;
  return schedule;
}

// Any n: every rank sends its input to every peer and folds all inputs in rank order 0..n-1,
// so every rank builds the identical expression (the one_shot determinism rule).
Schedule one_shot(int n, std::size_t count) {
  std::vector<std::vector<Step>> steps(n);
  for (int r = 0; r < n; ++r) {
    for (int p = 0; p < n; ++p) {
      if (p != r) steps[r].push_back(send(p, in, 0, count));
    }
    if (r == 0) {
      steps[r].push_back(copy({in, 0}, {out, 0}, count));
    } else {
      steps[r].push_back(recv(0, out, 0, count));
    }
    for (int p = 1; p < n; ++p) {
      if (p == r) {
        steps[r].push_back(local_reduce({out, 0}, {in, 0}, count));
      } else {
        steps[r].push_back(recv_reduce(p, {out, 0}, {out, 0}, count));
      }
    }
  }
  return make(Collective::all_reduce, count, std::move(steps));
}

void require_ok(const Schedule& schedule) {
  const Verdict verdict = verify(schedule);
  INFO(verdict.problem);
  REQUIRE(verdict.ok);
  REQUIRE(verdict.problem.empty());
}

std::string problem_of(const Schedule& schedule) {
  const Verdict verdict = verify(schedule);
  REQUIRE_FALSE(verdict.ok);
  REQUIRE_FALSE(verdict.problem.empty());
  return verdict.problem;
}

}  // namespace

TEST_CASE("hand-built all_reduce rings verify, out of place and in place", "[verifier]") {
  Schedule two = ring2();
  require_ok(two);
  REQUIRE(verify(two).elements_sent == 8);
  two.in_place = true;
  require_ok(two);

  Schedule three = ring3();
  require_ok(three);
  REQUIRE(verify(three).elements_sent == 12);
  three.in_place = true;
  require_ok(three);
}

TEST_CASE("a ring verifies for every n up to 64 and awkward counts", "[verifier]") {
  for (int n = 1; n <= 64; ++n) {
    for (const std::size_t count : {0, 1, 2, 5, 63, 64, 67}) {
      for (const bool in_place : {false, true}) {
        INFO("n " << n << " count " << count << " in_place " << in_place);
        const Schedule schedule = ring(n, count, in_place);
        const Verdict verdict = verify(schedule);
        INFO(verdict.problem);
        REQUIRE(verdict.ok);
        REQUIRE(verdict.elements_sent == 2 * static_cast<std::size_t>(n - 1) * count);
      }
    }
  }
}

TEST_CASE("large schedules verify: ring and one_shot at 64 ranks, 200 elements", "[verifier]") {
  require_ok(ring(64, 200));
  require_ok(one_shot(64, 200));
  require_ok(one_shot(5, 3));
  require_ok(one_shot(1, 3));
}

TEST_CASE("other collectives verify when correct", "[verifier]") {
  SECTION("broadcast chain from root 0 and from root 2") {
    require_ok(make(Collective::broadcast, 3,
                    {{send(1, in, 0, 3), copy({in, 0}, {out, 0}, 3)},
                     {recv(0, out, 0, 3), send(2, out, 0, 3)},
                     {recv(1, out, 0, 3)}}));
    Schedule in_place = make(Collective::broadcast, 3,
                             {{recv(2, out, 0, 3), send(1, out, 0, 3)}, {recv(0, out, 0, 3)}, {send(0, in, 0, 3)}}, 2);
    // Out of place, root 2 never copies its input to its output; in place it need not.
    CHECK_THAT(problem_of(in_place), Contains("rank 2 out[0]: expected r2.in[0] but found no data"));
    in_place.in_place = true;
    require_ok(in_place);
  }
  SECTION("reduce chain into root 2 through scratch on the way") {
    require_ok(make(Collective::reduce, 2,
                    {{send(1, in, 0, 2)},
                     {recv_reduce(0, {in, 0}, {scr, 0}, 2), send(2, scr, 0, 2)},
                     {recv_reduce(1, {in, 0}, {out, 0}, 2)}},
                    2, 2));
  }
  SECTION("all_gather, reduce_scatter and all_to_all between two ranks") {
    Schedule gather = make(Collective::all_gather, 2,
                           {{send(1, in, 0, 2), copy({in, 0}, {out, 0}, 2), recv(1, out, 2, 2)},
                            {send(0, in, 0, 2), copy({in, 0}, {out, 2}, 2), recv(0, out, 0, 2)}});
    require_ok(gather);
    REQUIRE(verify(gather).elements_sent == 4);
    // In place the input already sits in the right slot of the output, so there is no copy.
    Schedule in_place = make(Collective::all_gather, 2,
                             {{send(1, in, 0, 2), recv(1, out, 2, 2)}, {send(0, in, 0, 2), recv(0, out, 0, 2)}});
    in_place.in_place = true;
    require_ok(in_place);
    in_place.in_place = false;
    CHECK_THAT(problem_of(in_place), Contains("rank 0 out[0]: expected r0.in[0] but found no data"));

    require_ok(make(Collective::reduce_scatter, 2,
                    {{send(1, in, 2, 2), recv_reduce(1, {in, 0}, {out, 0}, 2)},
                     {send(0, in, 0, 2), recv_reduce(0, {in, 2}, {out, 0}, 2)}}));

    require_ok(make(Collective::all_to_all, 1,
                    {{send(1, in, 1, 1), copy({in, 0}, {out, 0}, 1), recv(1, out, 1, 1)},
                     {send(0, in, 0, 1), copy({in, 1}, {out, 1}, 1), recv(0, out, 0, 1)}}));
  }
  SECTION("empty collectives") {
    require_ok(make(Collective::all_to_all, 0, {{}, {}, {}}));
    require_ok(make(Collective::all_reduce, 0, {{}}));
  }
}

TEST_CASE("a missing contribution is caught", "[verifier]") {
  Schedule schedule = ring2();
  schedule.steps[1][1].op = Op::recv_copy;  // rank 1 forgets to add its own in[2,4)
  // Rank 1 then hands the incomplete chunk to rank 0, which is checked first.
  const std::string problem = problem_of(schedule);
  CHECK_THAT(problem, Contains("rank 0 out[2]"));
  CHECK_THAT(problem, Contains("r1.in[2] is missing"));
}

TEST_CASE("a contribution counted twice is caught", "[verifier]") {
  Schedule schedule = ring2();
  auto& steps = schedule.steps[0];
  steps.insert(steps.begin() + 2, local_reduce({out, 0}, {in, 0}, 2));
  link(schedule);
  const std::string problem = problem_of(schedule);
  CHECK_THAT(problem, Contains("rank 0 out[0]"));
  CHECK_THAT(problem, Contains("r0.in[0] appears 2 times"));
}

TEST_CASE("a contribution of the wrong element or a never-written output is caught", "[verifier]") {
  Schedule shifted = ring2();
  shifted.steps[0][1].src.offset = 2;  // rank 0 adds its in[2,4) into out[0,2)
  CHECK_THAT(problem_of(shifted), Contains("r0.in[2] does not belong there"));

  Schedule unwritten = ring2();
  unwritten.steps[0].resize(2);  // drop the all-gather half
  unwritten.steps[1].resize(2);
  link(unwritten);
  CHECK_THAT(problem_of(unwritten), Contains("rank 0 out[2]") && Contains("never written"));
}

TEST_CASE("the same sum in a different order on two ranks is caught", "[verifier]") {
  // Each rank folds its own input first: correct sums, but not bit-identical across ranks.
  const Schedule schedule = make(Collective::all_reduce, 1,
                                 {{send(1, in, 0, 1), recv_reduce(1, {in, 0}, {out, 0}, 1)},
                                  {send(0, in, 0, 1), recv_reduce(0, {in, 0}, {out, 0}, 1)}});
  const std::string problem = problem_of(schedule);
  CHECK_THAT(problem, Contains("rank 1 out[0] holds (r1.in[0] + r0.in[0])"));
  CHECK_THAT(problem, Contains("rank 0 holds (r0.in[0] + r1.in[0])"));
  CHECK_THAT(problem, Contains("different order"));
}

TEST_CASE("two ranks that both receive first deadlock", "[verifier]") {
  const Schedule schedule = make(Collective::all_reduce, 1,
                                 {{recv_reduce(1, {in, 0}, {out, 0}, 1), send(1, out, 0, 1)},
                                  {recv(0, out, 0, 1), send(0, in, 0, 1)}});
  const std::string problem = problem_of(schedule);
  CHECK_THAT(problem, Contains("deadlock"));
  CHECK_THAT(problem, Contains("rank 0 step 0 (recv+reduce in[0,1) + rank 1 -> out[0,1)) waits for rank 1 step 1"));
  CHECK_THAT(problem, Contains("rank 1 step 0 (recv rank 0 -> out[0,1)) waits for rank 0 step 1"));
}

TEST_CASE("in-place aliasing turns a write hazard into a deadlock", "[verifier]") {
  // Pairwise all_to_all receiving straight into the output: fine out of place, but in place
  // each rank's receive overwrites the slot it is still sending, so both wait for each other.
  Schedule direct = make(Collective::all_to_all, 1,
                         {{send(1, in, 1, 1), copy({in, 0}, {out, 0}, 1), recv(1, out, 1, 1)},
                          {send(0, in, 0, 1), copy({in, 1}, {out, 1}, 1), recv(0, out, 0, 1)}});
  require_ok(direct);
  direct.in_place = true;
  const std::string problem = problem_of(direct);
  CHECK_THAT(problem, Contains("deadlock"));
  CHECK_THAT(problem, Contains("rank 0 step 2"));
  CHECK_THAT(problem, Contains("rank 1 step 2"));
  CHECK_THAT(problem, Contains("write hazard"));

  // Staging through scratch fixes it: the hazard waits now resolve.
  Schedule staged = make(Collective::all_to_all, 1,
                         {{send(1, in, 1, 1), recv(1, scr, 0, 1), copy({scr, 0}, {out, 1}, 1)},
                          {send(0, in, 0, 1), recv(0, scr, 0, 1), copy({scr, 0}, {out, 0}, 1)}},
                         0, 1);
  staged.in_place = true;
  require_ok(staged);
}

TEST_CASE("a write that must wait for the receiver still verifies", "[verifier]") {
  // In place, rank 1 overwrites the input it sent before rank 0 has necessarily read it; the
  // hazard rule makes it wait, and rank 0 reads the value that was sent.
  Schedule schedule = make(Collective::all_reduce, 1,
                           {{send(1, out, 0, 1), recv_reduce(1, {in, 0}, {out, 0}, 1)},
                            {send(0, in, 0, 1), recv(0, scr, 0, 1), local_reduce({scr, 0}, {in, 0}, 1),
                             copy({scr, 0}, {out, 0}, 1)}},
                           0, 1);
  schedule.in_place = true;
  require_ok(schedule);
}

TEST_CASE("buffer rules are enforced", "[verifier]") {
  SECTION("out-of-bounds span") {
    Schedule schedule = ring2();
    schedule.steps[1][2].src.offset = 3;  // out[3,5) of 4 elements
    const std::string problem = problem_of(schedule);
    CHECK_THAT(problem, Contains("rank 1 step 2"));
    CHECK_THAT(problem, Contains("out[3,5) lies outside out (4 elements)"));
  }
  SECTION("scratch beyond scratch_count and offsets near overflow") {
    Schedule schedule = ring2();
    schedule.steps[0][3].dst = {scr, 0};
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 3") && Contains("outside scr (0 elements)"));
    schedule = ring2();
    schedule.steps[0][0].src.offset = std::numeric_limits<std::size_t>::max();
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 0"));
  }
  SECTION("write to input") {
    Schedule schedule = ring2();
    schedule.steps[0][3].dst.buffer = in;
    const std::string problem = problem_of(schedule);
    CHECK_THAT(problem, Contains("rank 0 step 3"));
    CHECK_THAT(problem, Contains("writes the input buffer"));
  }
  SECTION("reduce: a non-root rank writes or reads output") {
    Schedule schedule = make(Collective::reduce, 2,
                             {{send(1, in, 0, 2)}, {recv_reduce(0, {in, 0}, {out, 0}, 2), send(2, out, 0, 2)},
                              {recv_reduce(1, {in, 0}, {out, 0}, 2)}},
                             2);
    const std::string problem = problem_of(schedule);
    CHECK_THAT(problem, Contains("rank 1 step 0"));
    CHECK_THAT(problem, Contains("non-root rank of reduce"));
  }
  SECTION("broadcast: a non-root rank reads input") {
    Schedule schedule = make(Collective::broadcast, 1,
                             {{send(1, in, 0, 1), copy({in, 0}, {out, 0}, 1)}, {recv(0, out, 0, 1), send(2, in, 0, 1)},
                              {recv(1, out, 0, 1)}});
    const std::string problem = problem_of(schedule);
    CHECK_THAT(problem, Contains("rank 1 step 1"));
    CHECK_THAT(problem, Contains("non-root rank of broadcast reads in"));
  }
  SECTION("source and destination overlapping without coinciding") {
    Schedule schedule = ring2();
    schedule.steps[0].push_back(copy({out, 0}, {out, 1}, 2));
    link(schedule);
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 4") && Contains("overlap"));
    // In place, in[0,2) and out[1,3) are the same memory shifted by one.
    schedule = ring2();
    schedule.in_place = true;
    schedule.steps[0][1].dst.offset = 1;
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 1") && Contains("overlap"));
  }
}

TEST_CASE("messages that do not pair up are caught", "[verifier]") {
  SECTION("unmatched send") {
    Schedule schedule = ring2();
    schedule.steps[0].push_back(send(1, out, 0, 1));
    const std::string problem = problem_of(schedule);
    CHECK_THAT(problem, Contains("do not pair up"));
    CHECK_THAT(problem, Contains("rank 0 sends 3 messages to rank 1"));
  }
  SECTION("unmatched recv") {
    Schedule schedule = ring2();
    schedule.steps[1].push_back(recv(0, out, 0, 1));
    CHECK_THAT(problem_of(schedule), Contains("rank 1 step 4") && Contains("receives message 3"));
  }
  SECTION("count mismatch") {
    Schedule schedule = ring2();
    schedule.steps[1][3].count = 1;
    CHECK_THAT(problem_of(schedule), Contains("rank 1 step 3") && Contains("sends 2"));
  }
  SECTION("a schedule that was never linked") {
    Schedule schedule = ring2();
    for (auto& steps : schedule.steps) {
      for (Step& step : steps) step.match = 0;
    }
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 0") && Contains("link()"));
  }
}

TEST_CASE("reading data nobody has written is caught", "[verifier]") {
  // Rank 0 sends its output before computing it.
  Schedule early = make(Collective::all_reduce, 2,
                        {{send(1, out, 0, 2), recv_reduce(1, {in, 0}, {out, 0}, 2)},
                         {send(0, in, 0, 2), recv(0, out, 0, 2)}});
  const std::string problem = problem_of(early);
  CHECK_THAT(problem, Contains("rank 0 step 0"));
  CHECK_THAT(problem, Contains("holds no data yet"));

  Schedule local = make(Collective::all_reduce, 1, {{copy({scr, 0}, {out, 0}, 1)}}, 0, 1);
  CHECK_THAT(problem_of(local), Contains("rank 0 step 0") && Contains("reads scr[0]"));

  // A non-root broadcast rank's input holds nothing, even when it aliases the output.
  Schedule bcast = make(Collective::broadcast, 1, {{copy({in, 0}, {out, 0}, 1)}, {copy({out, 0}, {scr, 0}, 1)}}, 0, 1);
  bcast.in_place = true;
  CHECK_THAT(problem_of(bcast), Contains("rank 1 step 0") && Contains("reads out[0]"));
}

TEST_CASE("malformed schedules are reported, never crash", "[verifier]") {
  SECTION("bad peers") {
    for (const int peer : {-1, 2, 7, 1 << 30, 0}) {
      Schedule schedule = ring2();
      schedule.steps[0][0].peer = peer;  // 0 is rank 0 itself
      const std::string problem = problem_of(schedule);
      CHECK_THAT(problem, Contains("rank 0 step 0"));
    }
    Schedule schedule = ring2();
    schedule.steps[1][1].peer = -5;
    CHECK_THAT(problem_of(schedule), Contains("rank 1 step 1") && Contains("peer -5"));
  }
  SECTION("shape") {
    Schedule schedule = ring2();
    schedule.ranks = 3;
    CHECK_THAT(problem_of(schedule), Contains("step lists for 2 ranks"));
    schedule.ranks = 0;
    CHECK_THAT(problem_of(schedule), Contains("ranks is 0"));
    schedule.ranks = -4;
    problem_of(schedule);
  }
  SECTION("root out of range") {
    Schedule schedule = make(Collective::broadcast, 1, {{copy({in, 0}, {out, 0}, 1)}});
    require_ok(schedule);
    schedule.root = 1;
    CHECK_THAT(problem_of(schedule), Contains("root 1"));
    schedule.root = -1;
    CHECK_THAT(problem_of(schedule), Contains("root -1"));
  }
  SECTION("invalid enum values") {
    Schedule schedule = ring2();
    schedule.steps[0][1].op = static_cast<Op>(9);
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 1 has invalid op 9"));
    schedule = ring2();
    schedule.steps[0][1].dst.buffer = static_cast<Buffer>(5);
    CHECK_THAT(problem_of(schedule), Contains("rank 0 step 1") && Contains("invalid buffer 5"));
    schedule = ring2();
    schedule.collective = static_cast<Collective>(42);
    CHECK_THAT(problem_of(schedule), Contains("invalid collective 42"));
  }
  SECTION("sizes too large to simulate or overflowing") {
    Schedule schedule = ring2();
    schedule.count = std::numeric_limits<std::size_t>::max() / 2 + 3;
    CHECK_THAT(problem_of(schedule), Contains("limit"));
    schedule = ring2();
    schedule.scratch_count = std::numeric_limits<std::size_t>::max();
    CHECK_THAT(problem_of(schedule), Contains("limit"));
    schedule = make(Collective::all_to_all, 0, {{}, {}});
    schedule.count = std::numeric_limits<std::size_t>::max() / 2 + 1;  // count * ranks wraps to 0
    CHECK_THAT(problem_of(schedule), Contains("limit"));
  }
}

TEST_CASE("huge and deep expressions are summarised, not expanded", "[verifier]") {
  // Doubling out[0] 200 times would give 2^200 leaves if expanded; 10000 additions of the same
  // input make an expression 10000 deep. Neither may overflow a count or the stack.
  std::vector<Step> doubling{copy({in, 0}, {out, 0}, 1)};
  for (int k = 0; k < 200; ++k) doubling.push_back(local_reduce({out, 0}, {out, 0}, 1));
  CHECK_THAT(problem_of(make(Collective::all_reduce, 1, {doubling})),
             Contains("rank 0 out[0]") && Contains("a combination of 4 or more contributions"));

  std::vector<Step> deep{copy({in, 0}, {out, 0}, 1)};
  for (int k = 0; k < 10000; ++k) deep.push_back(local_reduce({out, 0}, {in, 0}, 1));
  CHECK_THAT(problem_of(make(Collective::all_reduce, 1, {deep})), Contains("or more contributions"));

  std::vector<Step> twice{copy({in, 0}, {out, 0}, 1), local_reduce({out, 0}, {in, 0}, 1)};
  CHECK_THAT(problem_of(make(Collective::all_reduce, 1, {twice})),
             Contains("found (r0.in[0] + r0.in[0]) (r0.in[0] appears 2 times)"));
}

TEST_CASE("a deadlock among many ranks lists the first few and counts the rest", "[verifier]") {
  // Every rank waits for the next one before sending: a cycle of 12.
  const int n = 12;
  std::vector<std::vector<Step>> steps(n);
  for (int r = 0; r < n; ++r) {
    steps[r] = {recv(mod(r + 1, n), out, 0, 1), send(mod(r - 1, n), in, 0, 1)};
  }
  const std::string problem = problem_of(make(Collective::all_reduce, 1, steps));
  CHECK_THAT(problem, Contains("rank 7 step 0 (recv rank 8 -> out[0,1)) waits for rank 8 step 1"));
  CHECK_THAT(problem, Contains("but rank 8 is stuck at step 0"));
  CHECK_THAT(problem, Contains("and 4 more stuck ranks"));
  CHECK_THAT(problem, !Contains("rank 8 step 0 (recv"));
}

TEST_CASE("randomly corrupted schedules never crash or hang the verifier", "[verifier]") {
  // Under the sanitizer builds this doubles as a memory-safety check of every rejection path.
  std::mt19937 rng(2024);
  const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Schedule schedule = ring(pick(1, 5), static_cast<std::size_t>(pick(0, 9)), pick(0, 1) == 1);
    schedule.scratch_count = static_cast<std::size_t>(pick(0, 3));
    for (int edit = pick(1, 3); edit > 0; --edit) {
      auto& steps = schedule.steps[static_cast<std::size_t>(pick(0, schedule.ranks - 1))];
      if (steps.empty()) continue;
      Step& step = steps[static_cast<std::size_t>(pick(0, static_cast<int>(steps.size()) - 1))];
      switch (pick(0, 9)) {
        case 0: step.op = static_cast<Op>(pick(0, 5)); break;
        case 1: step.peer = pick(-2, schedule.ranks + 1); break;
        case 2: step.count = static_cast<std::size_t>(pick(0, 12)); break;
        case 3: step.src = {static_cast<Buffer>(pick(0, 3)), static_cast<std::size_t>(pick(0, 12))}; break;
        case 4: step.dst = {static_cast<Buffer>(pick(0, 3)), static_cast<std::size_t>(pick(0, 12))}; break;
        case 5: step.match = static_cast<std::uint32_t>(pick(0, 6)); break;
        case 6: steps.erase(steps.begin()); break;
        case 7: std::swap(steps.front(), steps.back()); break;
        case 8: schedule.collective = static_cast<Collective>(pick(0, 6)); break;
        default: schedule.root = pick(-1, schedule.ranks); break;
      }
    }
    if (pick(0, 1) == 1) {
      try {
        link(schedule);  // often keeps the corruption past the pairing check into the simulation
      } catch (const chorus::Error&) {
      }
    }
    const Verdict verdict = verify(schedule);
    REQUIRE(verdict.ok == verdict.problem.empty());
    rejected += verdict.ok ? 0 : 1;
  }
  CHECK(rejected > 2000);
}

}  // namespace test_verifier
