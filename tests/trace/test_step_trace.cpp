// CHORUS_TRACE: the Chrome trace-event file a Team::run writes parses as JSON, has a track per rank,
// a slice per collective with its steps nested inside, and exactly one flow per send/receive pair,
// from the sender's track to the receiver's.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chorus/algo/build.hpp>

#include "../host/harness.hpp"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace test_step_trace {

namespace {

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;
using json = nlohmann::json;

// Microseconds as written (exact to the nanosecond) back to integer nanoseconds, so nesting is exact.
std::int64_t ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

struct Slice {
  std::string name;
  std::int64_t begin;
  std::int64_t end;
  json args;
};

std::size_t steps_of(const chorus::algo::Schedule& schedule, int rank) {
  return schedule.steps[static_cast<std::size_t>(rank)].size();
}

}  // namespace

TEST_CASE("the step trace is Chrome trace JSON with nested slices and one flow per message", "[trace][host]") {
  char pattern[] = "/tmp/chorus-step-trace-XXXXXX";
  const int fd = mkstemp(pattern);
  REQUIRE(fd >= 0);
  const std::string path = pattern;
  constexpr int kRanks = 4;
  constexpr std::size_t kCount = 1003;
  {
    harness::ScopedEnv trace("CHORUS_TRACE", path.c_str());
    Team team(kRanks);
    harness::run(team, [&](Comm& comm) {
      std::vector<float> data(kCount, 1.0f);
      comm.all_reduce(data.data(), data.data(), kCount, ReduceOp::sum, Algorithm::ring);
      comm.all_reduce(data.data(), data.data(), kCount, ReduceOp::sum, Algorithm::tree);
    });
  }
  std::ifstream file(path);
  const json trace = json::parse(file);
  std::remove(path.c_str());

  const json& events = trace["traceEvents"];
  REQUIRE(events.is_array());
  std::map<int, std::vector<Slice>> calls;   // by track
  std::map<int, std::vector<Slice>> steps;
  std::map<int, std::string> track_names;
  std::map<std::uint64_t, std::vector<json>> flows;  // id -> its "s" and "f" events
  std::size_t sends = 0;
  std::size_t receives = 0;
  for (const json& e : events) {
    const std::string ph = e["ph"];
    const int tid = e["tid"];
    if (ph == "M" && e["name"] == "thread_name") track_names[tid] = e["args"]["name"];
    if (ph == "X") {
      const Slice slice{e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["args"]};
      CHECK(slice.end >= slice.begin);
      (e["cat"] == "collective" ? calls : steps)[tid].push_back(slice);
      if (e["name"] == "send") ++sends;
      if (e["name"] == "recv" || e["name"] == "recv+reduce") ++receives;
    }
    if (ph == "s" || ph == "f") flows[e["id"].get<std::uint64_t>()].push_back(e);
  }

  // A track per rank, two collective slices on each, and each rank's steps as its schedules say.
  namespace algo = chorus::algo;
  const algo::Schedule ring = algo::build(algo::Collective::all_reduce, algo::Pattern::ring, kRanks, kCount, 0);
  const algo::Schedule tree = algo::build(algo::Collective::all_reduce, algo::Pattern::tree, kRanks, kCount, 0);
  std::size_t schedule_sends = 0;
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r);
    CHECK(track_names[r] == "rank " + std::to_string(r));
    REQUIRE(calls[r].size() == 2);
    CHECK(calls[r][0].name == "all_reduce");
    CHECK(calls[r][0].args["what"] == "all_reduce 1003 x float32 sum ring in place");
    CHECK(calls[r][1].args["what"] == "all_reduce 1003 x float32 sum tree in place");
    CHECK(steps[r].size() == steps_of(ring, r) + steps_of(tree, r));
    for (const auto* s : {&ring, &tree}) {
      for (const algo::Step& step : s->steps[static_cast<std::size_t>(r)]) schedule_sends += step.op == algo::Op::send;
    }
    // Nesting: each step lies inside one of its rank's collective slices, and steps do not overlap.
    std::int64_t previous_end = 0;
    for (const Slice& step : steps[r]) {
      bool inside = false;
      for (const Slice& call : calls[r]) inside = inside || (call.begin <= step.begin && step.end <= call.end);
      CHECK(inside);
      CHECK(step.begin >= previous_end);
      previous_end = step.end;
      CHECK(step.args.contains("bytes"));
      if (step.name != "copy" && step.name != "reduce") CHECK(step.args.contains("peer"));
    }
  }
  CHECK(sends == schedule_sends);
  CHECK(receives == sends);

  // One flow per send/receive pair: an "s" on the sender's track, an "f" on the peer's, not before it.
  CHECK(flows.size() == sends);
  for (const auto& [id, pair] : flows) {
    INFO("flow " << id);
    REQUIRE(pair.size() == 2);
    CHECK(pair[0]["ph"] == "s");
    CHECK(pair[1]["ph"] == "f");
    CHECK(pair[1]["bp"] == "e");
    CHECK(pair[0]["tid"] != pair[1]["tid"]);
    CHECK(ns(pair[0]["ts"]) <= ns(pair[1]["ts"]));
  }
}

TEST_CASE("an unwritable CHORUS_TRACE path is a warning, not a failed run", "[trace][host]") {
  harness::ScopedEnv trace("CHORUS_TRACE", "/nonexistent-dir/trace.json");
  Team team(2);
  CHECK_NOTHROW(harness::run(team, [](Comm& comm) { comm.barrier(); }));
}

}  // namespace test_step_trace
