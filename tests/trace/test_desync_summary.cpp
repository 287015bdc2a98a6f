// The desync summary from hand-made flight records: where ranks first disagree, who is the odd one
// out (skipped, extra or reordered call), who is behind, and each rank's last completed and current call.
#include <catch2/catch.hpp>

#include <chorus/runtime/desync_summary.hpp>

#include <string>
#include <vector>

namespace test_desync_summary {

namespace {

using Catch::Matchers::Contains;
using chorus::runtime::CallDescriptor;
using chorus::runtime::CallKind;
using chorus::runtime::CallRecord;
using chorus::runtime::CallState;
using chorus::runtime::RankRecord;

CallDescriptor all_reduce(std::size_t count) {
  CallDescriptor call;
  call.kind = CallKind::all_reduce;
  call.type = chorus::DataType::float32;
  call.count = count;
  return call;
}

CallDescriptor broadcast(std::size_t count) {
  CallDescriptor call;
  call.kind = CallKind::broadcast;
  call.type = chorus::DataType::float32;
  call.count = count;
  call.pattern = chorus::algo::Pattern::binomial;
  return call;
}

// A rank's record of `calls`, all done except the last, which is running at step 1 of 4.
RankRecord rank_with(int rank, const std::vector<CallDescriptor>& calls) {
  RankRecord record;
  record.rank = rank;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    CallRecord call;
    call.sequence = i + 1;
    call.call = calls[i];
    call.state = i + 1 == calls.size() ? CallState::running : CallState::done;
    call.steps = 4;
    call.step = i + 1 == calls.size() ? 1 : 3;
    call.peer = 0;
    record.calls.push_back(call);
  }
  return record;
}

}  // namespace

TEST_CASE("the first disagreement names the odd rank and the sequence number", "[desync]") {
  // Ranks 0, 2, 3 call all_reduce, broadcast; rank 1 skipped the broadcast and is in the next all_reduce.
  const std::vector<RankRecord> ranks = {rank_with(0, {all_reduce(16), broadcast(8)}),
                                         rank_with(1, {all_reduce(16), all_reduce(16)}),
                                         rank_with(2, {all_reduce(16), broadcast(8)}),
                                         rank_with(3, {all_reduce(16), broadcast(8)})};
  const auto split = chorus::runtime::first_disagreement(ranks);
  CHECK(split.sequence == 2);
  CHECK(split.majority == std::vector<int>{0, 2, 3});
  CHECK(split.others == std::vector<int>{1});
  const std::string text = chorus::runtime::desync_summary(ranks);
  INFO(text);
  CHECK_THAT(text, Contains("first disagreement at call 2: ranks 0, 2, 3 called broadcast 8 x float32 root 0 "
                            "binomial; rank 1 called all_reduce 16 x float32 sum ring"));
  CHECK_THAT(text, Contains("rank 1 is the odd one out at call 2"));
  CHECK_THAT(text, Contains("no rank is behind: every rank reached call 2"));
  CHECK_THAT(text, Contains("rank 1: last done call 1 all_reduce 16 x float32 sum ring; now call 2 all_reduce 16 x "
                            "float32 sum ring: running, at step 1 of 4 (peer 0)"));
}

TEST_CASE("with no majority (1 against 1) nobody is blamed", "[desync]") {
  const std::vector<RankRecord> ranks = {rank_with(0, {all_reduce(16), broadcast(8)}),
                                         rank_with(1, {all_reduce(16), all_reduce(16)})};
  const auto split = chorus::runtime::first_disagreement(ranks);
  CHECK(split.sequence == 2);
  CHECK(split.no_majority);
  const std::string text = chorus::runtime::desync_summary(ranks);
  INFO(text);
  CHECK_THAT(text, Contains("first disagreement at call 2"));
  CHECK_THAT(text, Contains("no majority at call 2: the records cannot tell which side"));
  CHECK_FALSE(text.find("odd one out") != std::string::npos);
  CHECK_FALSE(text.find("skipped call") != std::string::npos);
}

TEST_CASE("a skipped call is named once the others have made the call after it", "[desync]") {
  const std::vector<RankRecord> ranks = {rank_with(0, {all_reduce(16), broadcast(8), all_reduce(4)}),
                                         rank_with(1, {all_reduce(16), all_reduce(4)}),
                                         rank_with(2, {all_reduce(16), broadcast(8), all_reduce(4)})};
  const std::string text = chorus::runtime::desync_summary(ranks);
  INFO(text);
  CHECK_THAT(text, Contains("rank 1 skipped call 2: its call 2 is the others' call 3"));
  CHECK_THAT(text, Contains("behind: rank 1 (reached call 2; others reached up to call 3)"));
}

TEST_CASE("an extra call is named as one", "[desync]") {
  // Three ranks, so there is a majority (with two, either side could be the one in error).
  const std::vector<RankRecord> ranks = {rank_with(0, {all_reduce(16), all_reduce(4)}),
                                         rank_with(1, {all_reduce(16), broadcast(8), all_reduce(4)}),
                                         rank_with(2, {all_reduce(16), all_reduce(4)})};
  const std::string text = chorus::runtime::desync_summary(ranks);
  INFO(text);
  CHECK_THAT(text, Contains("first disagreement at call 2"));
  CHECK_THAT(text, Contains("rank 1 made an extra call: its call 3 is the others' call 2"));
}

TEST_CASE("ranks that agree: the one that has not arrived is behind", "[desync]") {
  std::vector<RankRecord> ranks = {rank_with(0, {all_reduce(16), all_reduce(16), all_reduce(16)}),
                                   rank_with(1, {all_reduce(16), all_reduce(16)}),
                                   rank_with(2, {all_reduce(16), all_reduce(16), all_reduce(16)})};
  ranks[1].calls.back().state = CallState::done;  // finished call 2, then returned
  ranks[1].returned = true;
  const std::string text = chorus::runtime::desync_summary(ranks);
  INFO(text);
  CHECK(chorus::runtime::first_disagreement(ranks).sequence == 0);
  CHECK_THAT(text, Contains("the ranks agree on every call they recorded"));
  CHECK_THAT(text, Contains("behind: rank 1 (reached call 2; others reached up to call 3)"));
  CHECK_THAT(text, Contains("rank 1: last done call 2 all_reduce 16 x float32 sum ring; now no call in progress "
                            "(returned from its function)"));
  CHECK_THAT(text, Contains("rank 0: last done call 2 all_reduce 16 x float32 sum ring; now call 3"));
}

TEST_CASE("a large team lists the interesting ranks and counts the rest", "[desync]") {
  std::vector<RankRecord> ranks;
  for (int r = 0; r < 40; ++r) {
    ranks.push_back(rank_with(r, r == 33 ? std::vector<CallDescriptor>{all_reduce(16)}
                                         : std::vector<CallDescriptor>{all_reduce(16), all_reduce(16)}));
  }
  const std::string text = chorus::runtime::desync_summary(ranks);
  INFO(text);
  CHECK_THAT(text, Contains("behind: rank 33 (reached call 1; others reached up to call 2)"));
  CHECK_THAT(text, Contains("\n  rank 33: "));
  CHECK_THAT(text, Contains("... 24 more ranks"));
  CHECK(chorus::runtime::desync_summary({}) ==
        "desync summary (flight recorders of 0 ranks):\n  nothing recorded (CHORUS_TRACE_BUFFER=0, or no call made yet)");
}

// With the recorders off (CHORUS_TRACE_BUFFER=0) every rank's record is empty: that is no evidence
// that the ranks agree, and no rank is behind.
TEST_CASE("empty records say nothing was recorded, not that the ranks agree", "[desync]") {
  const std::string text = chorus::runtime::desync_summary({rank_with(0, {}), rank_with(1, {}), rank_with(2, {})});
  INFO(text);
  CHECK(text == "desync summary (flight recorders of 3 ranks):\n  nothing recorded (CHORUS_TRACE_BUFFER=0, or no call "
                "made yet)");
}

}  // namespace test_desync_summary
