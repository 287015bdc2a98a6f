// The host backend's flight recorder seen from outside: comm.dump_trace after a sequence of calls,
// the desync summary in the error of a rank that skipped a call (with CHORUS_TRACE_DUMP writing every
// rank's record), a slow rank's timeout, a rank that returned early, and CHORUS_TRACE_BUFFER.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../host/harness.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace test_host_flight_recorder {

namespace {

using Catch::Matchers::Contains;
using chorus::Algorithm;
using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;
using json = nlohmann::json;

// A fresh directory under the build's temporary folder, removed with its files at scope exit.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/chorus-trace-XXXXXX";
    const char* made = mkdtemp(pattern);
    REQUIRE(made != nullptr);
    path_ = made;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

json read_json(const std::string& path) {
  std::ifstream file(path);
  REQUIRE(file.good());
  return json::parse(file);
}

struct Outcome {
  bool threw = false;
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

}  // namespace

TEST_CASE("every rank's record after a sequence of calls", "[flight_recorder][host]") {
  TempDir dir;
  const std::string path = dir.path() + "/record.json";
  Team team(3);
  harness::run(team, [&](Comm& comm) {
    std::vector<float> data(16, 1.0f);
    std::vector<std::int32_t> ints(5, comm.rank());
    comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
    comm.broadcast(ints.data(), ints.data(), ints.size(), 2);
    comm.barrier();
    std::vector<float> blocks(3 * 7, 2.0f);
    comm.reduce_scatter(blocks.data(), blocks.data() + comm.rank() * 7, 7, ReduceOp::max);
    std::vector<double> gathered(3 * 2);
    std::vector<double> mine(2, 0.5);
    comm.all_gather(mine.data(), gathered.data(), 2);
    comm.barrier();
    comm.barrier();  // every rank has finished the barrier before it, so calls 1-6 are done everywhere
    if (comm.rank() == 1) comm.dump_trace(path);
  });

  const json record = read_json(path);
  CHECK(record["format"] == "chorus-flight-record");
  REQUIRE(record["ranks"].size() == 3);
  for (int r = 0; r < 3; ++r) {
    const json& rank = record["ranks"][static_cast<std::size_t>(r)];
    INFO("rank " << r);
    CHECK(rank["rank"] == r);
    const json& calls = rank["calls"];
    REQUIRE(calls.size() == 7);
    const char* names[] = {"all_reduce", "broadcast", "barrier", "reduce_scatter", "all_gather", "barrier", "barrier"};
    for (std::size_t i = 0; i < 7; ++i) {
      INFO("call " << i + 1);
      CHECK(calls[i]["sequence"] == i + 1);
      CHECK(calls[i]["collective"] == names[i]);
      if (i < 6) CHECK(calls[i]["state"] == "done");
      CHECK(calls[i]["start_ns"].get<std::int64_t>() > 0);
      if (calls[i]["state"] == "done") {
        CHECK(calls[i]["end_ns"].get<std::int64_t>() >= calls[i]["start_ns"].get<std::int64_t>());
      }
      if (i > 0) CHECK(calls[i]["start_ns"].get<std::int64_t>() >= calls[i - 1]["end_ns"].get<std::int64_t>());
    }
    CHECK(calls[0]["count"] == 16);
    CHECK(calls[0]["type"] == "float32");
    CHECK(calls[0]["op"] == "sum");
    CHECK(calls[0]["algorithm"] == "ring");
    CHECK(calls[0]["in_place"] == true);
    CHECK(calls[0]["steps"] == 4 * (3 - 1));  // the ring's reduce-scatter and all-gather: n-1 sends and receives each
    CHECK(calls[1]["count"] == 5);
    CHECK(calls[1]["type"] == "int32");
    CHECK(calls[1]["root"] == 2);
    CHECK(calls[1]["algorithm"] == "binomial");
    CHECK(calls[3]["op"] == "max");
    CHECK(calls[3]["count"] == 7);
    CHECK(calls[3]["in_place"] == true);
    CHECK(calls[4]["type"] == "float64");
    CHECK(calls[4]["in_place"] == false);
    CHECK(calls[2]["steps"] == 0);
  }
  CHECK_THAT(record["summary"].get<std::string>(), Contains("the ranks agree on every call they recorded"));
}

TEST_CASE("a rank that skips a call: the summary names it and every rank's record is dumped",
          "[flight_recorder][host][mismatch]") {
  TempDir dir;
  harness::ScopedEnv dump("CHORUS_TRACE_DUMP", dir.path().c_str());
  constexpr int kRanks = 4;
  std::vector<Outcome> outcomes(kRanks);
  Team team(kRanks);
  harness::run(team, [&](Comm& comm) {
    std::vector<float> data(16, 1.0f);
    std::vector<float> small(8, 2.0f);
    try {
      comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
      if (comm.rank() != 1) comm.broadcast(small.data(), small.data(), small.size(), 0);  // rank 1 skips it
      comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
    } catch (const Error& e) {
      outcomes[static_cast<std::size_t>(comm.rank())] = Outcome{true, e.code(), e.what()};
    }
  });

  // The rank that detected the mismatch explains it; the others are released with its message.
  for (int r = 0; r < kRanks; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.message);
    CHECK(o.threw);
    CHECK(o.code == ErrorCode::mismatch);
    CHECK_THAT(o.message, Contains("desync summary (flight recorders of 4 ranks):"));
    CHECK_THAT(o.message, Contains("first disagreement at call 2: ranks 0, 2, 3 called broadcast 8 x float32 root 0"));
    CHECK_THAT(o.message, Contains("; rank 1 called all_reduce 16 x float32 sum"));
    CHECK_THAT(o.message, Contains("rank 1 is the odd one out at call 2"));
    CHECK_THAT(o.message, Contains("every rank's record: " + dir.path() + "/chorus-flight-record-comm"));
  }

  // The dump the failing rank wrote: every rank's calls, rank 1's second one an all_reduce.
  const std::string& message = outcomes[0].message;
  const std::size_t at = message.find(dir.path() + "/chorus-flight-record-comm");
  const std::string path = message.substr(at, message.find(".json", at) + 5 - at);
  const json record = read_json(path);
  REQUIRE(record["ranks"].size() == kRanks);
  for (int r = 0; r < kRanks; ++r) {
    const json& calls = record["ranks"][static_cast<std::size_t>(r)]["calls"];
    INFO("rank " << r);
    REQUIRE(calls.size() >= 2);
    CHECK(calls[0]["collective"] == "all_reduce");
    CHECK(calls[0]["state"] == "done");
    CHECK(calls[1]["sequence"] == 2);
    CHECK(calls[1]["collective"] == (r == 1 ? "all_reduce" : "broadcast"));
    CHECK(calls[1]["state"] != "done");
  }
  CHECK_THAT(record["summary"].get<std::string>(), Contains("first disagreement at call 2"));

  // After the run, the team's dump is settled: every rank left call 2 failed and returned.
  const std::string settled = dir.path() + "/settled.json";
  team.dump_trace(settled);
  const json after = read_json(settled);
  for (int r = 0; r < kRanks; ++r) {
    const json& rank = after["ranks"][static_cast<std::size_t>(r)];
    INFO("rank " << r);
    CHECK(rank["returned"] == true);
    REQUIRE(rank["calls"].size() == 2);
    CHECK(rank["calls"][1]["state"] == "failed");
    CHECK(rank["calls"][1]["end_ns"].get<std::int64_t>() >= rank["calls"][1]["start_ns"].get<std::int64_t>());
  }
}

TEST_CASE("a slow rank: the timeout says who is behind and where the others wait", "[flight_recorder][host]") {
  harness::ScopedEnv timeout("CHORUS_TIMEOUT_MS", "300");
  std::string message;
  Team team(3);
  try {
    harness::run(team, [&](Comm& comm) {
      std::vector<float> data(1000, 1.0f);
      comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
      if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // "compute"
      comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
    });
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Contains("timed out after"));
  CHECK_THAT(message, Contains("behind: rank 2 (reached call 1; others reached up to call 2)"));
  CHECK_THAT(message, Contains("rank 2: last done call 1 all_reduce 1000 x float32 sum ring in place; now no call in progress"));
  CHECK_THAT(message, Contains("rank 0: last done call 1 all_reduce 1000 x float32 sum ring in place; now call 2 all_reduce "
                               "1000 x float32 sum ring in place: running, at step"));
}

TEST_CASE("a rank that returns early is named behind", "[flight_recorder][host]") {
  std::string message;
  Team team(3);
  try {
    harness::run(team, [&](Comm& comm) {
      std::vector<float> data(8, 1.0f);
      const int calls = comm.rank() == 1 ? 2 : 3;  // rank 1 skips one of three identical calls
      for (int i = 0; i < calls; ++i) comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
    });
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::mismatch);
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Contains("rank 1 returned from its function"));
  CHECK_THAT(message, Contains("behind: rank 1 (reached call 2; others reached up to call 3)"));
  CHECK_THAT(message, Contains("(returned from its function)"));
}

TEST_CASE("CHORUS_TRACE_BUFFER sizes the recorder, 0 turns it off, and bad values are refused",
          "[flight_recorder][host][env]") {
  TempDir dir;
  const std::string path = dir.path() + "/record.json";
  SECTION("a small buffer keeps the last calls") {
    harness::ScopedEnv buffer("CHORUS_TRACE_BUFFER", "3");
    Team team(2);
    harness::run(team, [&](Comm& comm) {
      for (int i = 0; i < 10; ++i) comm.barrier();
      if (comm.rank() == 0) comm.dump_trace(path);
    });
    const json calls = read_json(path)["ranks"][0]["calls"];
    REQUIRE(calls.size() == 3);
    CHECK(calls[0]["sequence"] == 8);
    CHECK(calls[2]["sequence"] == 10);
  }
  SECTION("0 records nothing") {
    harness::ScopedEnv buffer("CHORUS_TRACE_BUFFER", "0");
    Team team(2);
    harness::run(team, [&](Comm& comm) {
      comm.barrier();
      if (comm.rank() == 0) comm.dump_trace(path);
    });
    const json record = read_json(path);
    CHECK(record["ranks"][1]["calls"].empty());
    CHECK_THAT(record["summary"].get<std::string>(), Contains("nothing recorded (CHORUS_TRACE_BUFFER=0"));
    CHECK_THAT(record["summary"].get<std::string>(), !Contains("agree"));
  }
  SECTION("malformed values") {
    for (const char* bad : {"lots", "-1", "12k", "1048577", ""}) {
      harness::ScopedEnv buffer("CHORUS_TRACE_BUFFER", bad);
      INFO("CHORUS_TRACE_BUFFER='" << bad << "'");
      if (*bad == '\0') {
        CHECK_NOTHROW(Team(2));  // empty means unset
        continue;
      }
      try {
        Team team(2);
        FAIL("accepted");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::invalid_argument);
        CHECK_THAT(std::string(e.what()), Contains("chorus::host::Team: chorus: CHORUS_TRACE_BUFFER must be a number of "
                                                   "calls from 0 (off) to 1048576, got '" + std::string(bad) + "'"));
      }
    }
  }
  SECTION("dump_trace to a path that cannot be written") {
    Team team(1);
    std::string message;
    harness::run(team, [&](Comm& comm) {
      try {
        comm.dump_trace(dir.path() + "/no/such/dir/record.json");
      } catch (const Error& e) {
        message = e.what();
      }
    });
    CHECK_THAT(message, Contains("chorus::dump_trace on rank 0: cannot write the flight record to '"));
    Comm null;
    CHECK_THROWS_AS(null.dump_trace(path), Error);
  }
}

}  // namespace test_host_flight_recorder
