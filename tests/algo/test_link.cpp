// link(): pairs the k-th send from p to q with the k-th recv at q from p, and rejects schedules
// whose messages do not line up with chorus::Error (code internal) naming rank and step.
#include <chorus/algo/schedule.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace test_link {

namespace {

using namespace chorus::algo;
using Catch::Matchers::Contains;

Step message(Op op, int peer, std::size_t count) {
  Step step;
  step.op = op;
  step.peer = peer;
  step.count = count;
  step.src = {Buffer::input, 0};
  step.dst = {Buffer::output, 0};
  return step;
}
Step send(int peer, std::size_t count = 1) { return message(Op::send, peer, count); }
Step recv(int peer, std::size_t count = 1) { return message(Op::recv_copy, peer, count); }
Step recv_reduce(int peer, std::size_t count = 1) { return message(Op::recv_reduce, peer, count); }
Step local_copy() {
  Step step;
  step.op = Op::copy;
  step.count = 1;
  return step;
}

Schedule of(std::vector<std::vector<Step>> steps) {
  Schedule schedule;
  schedule.ranks = static_cast<int>(steps.size());
  schedule.count = 1;
  schedule.steps = std::move(steps);
  return schedule;
}

std::string link_error(Schedule schedule) {
  try {
    link(schedule);
  } catch (const chorus::Error& error) {
    CHECK(error.code() == chorus::ErrorCode::internal);
    return error.what();
  }
  FAIL("link() accepted a schedule whose messages do not pair up");
  return {};
}

}  // namespace

TEST_CASE("link numbers sends per peer and points each recv at its send", "[link]") {
  Schedule schedule = of({{send(1), send(2), local_copy(), send(1), recv(2)},
                          {recv_reduce(0), recv(0), send(2)},
                          {recv(1), recv(0), send(0)}});
  link(schedule);
  const auto& r0 = schedule.steps[0];
  CHECK(r0[0].match == 1);  // first send 0 -> 1
  CHECK(r0[1].match == 1);  // first send 0 -> 2
  CHECK(r0[2].match == 0);  // local steps are left alone
  CHECK(r0[3].match == 2);  // second send 0 -> 1
  CHECK(r0[4].match == 2);  // recv from 2 matches rank 2's step 2
  CHECK(schedule.steps[1][0].match == 0);
  CHECK(schedule.steps[1][1].match == 3);
  CHECK(schedule.steps[1][2].match == 1);
  CHECK(schedule.steps[2][0].match == 2);
  CHECK(schedule.steps[2][1].match == 1);
  CHECK(schedule.steps[2][2].match == 1);

  // Linking is idempotent: stale matches are overwritten, not trusted.
  Schedule again = schedule;
  for (auto& steps : again.steps) {
    for (Step& step : steps) step.match = 99;
  }
  link(again);
  for (std::size_t rank = 0; rank < 3; ++rank) {
    for (std::size_t index = 0; index < schedule.steps[rank].size(); ++index) {
      if (again.steps[rank][index].op == Op::copy) continue;
      CHECK(again.steps[rank][index].match == schedule.steps[rank][index].match);
    }
  }
}

TEST_CASE("link accepts schedules without messages", "[link]") {
  Schedule single = of({{local_copy()}});
  link(single);
  Schedule empty = of({{}, {}, {}, {}});
  link(empty);
  CHECK(empty.steps.size() == 4);
}

TEST_CASE("link rejects a count mismatch", "[link]") {
  const std::string what = link_error(of({{send(1, 4)}, {recv(0, 3)}}));
  CHECK_THAT(what, Contains("rank 1 step 0 receives 3 elements but rank 0 step 0 sends 4"));
}

TEST_CASE("link rejects unmatched messages", "[link]") {
  CHECK_THAT(link_error(of({{send(1), send(1)}, {recv(0)}})),
             Contains("rank 0 sends 2 messages to rank 1, which receives 1"));
  CHECK_THAT(link_error(of({{send(1)}, {recv(0), recv(0)}})),
             Contains("rank 1 step 1 receives message 2 from rank 0, which sends only 1"));
  CHECK_THAT(link_error(of({{}, {recv_reduce(0)}})), Contains("rank 1 step 0 receives message 1 from rank 0"));
  // A message to the wrong peer leaves one unmatched send and one unmatched recv.
  CHECK_THAT(link_error(of({{send(2)}, {recv(0)}, {}})), Contains("rank 1 step 0"));
}

TEST_CASE("link rejects invalid peers", "[link]") {
  for (const int peer : {-1, 2, 100}) {
    INFO("peer " << peer);
    CHECK_THAT(link_error(of({{send(peer)}, {}})),
               Contains("rank 0 step 0 sends to invalid peer " + std::to_string(peer)));
    CHECK_THAT(link_error(of({{}, {local_copy(), recv(peer)}})),
               Contains("rank 1 step 1 receives from invalid peer " + std::to_string(peer)));
  }
  CHECK_THAT(link_error(of({{send(0)}, {}})), Contains("sends to invalid peer 0"));
  CHECK_THAT(link_error(of({{}, {recv(1)}})), Contains("receives from invalid peer 1"));
}

}  // namespace test_link
