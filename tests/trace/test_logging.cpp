// CHORUS_LOG=info: one line per communicator created (a team run, a split) and per algorithm choice
// with its reason, from rank 0 only and once per schedule a rank builds; debug adds the schedule.
#include <catch2/catch.hpp>

#include "../host/harness.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace test_logging {

namespace {

using Catch::Matchers::Contains;
using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

// What `fn` writes to standard error (file descriptor 2), through a temporary file.
template <class Fn>
std::string captured_stderr(Fn&& fn) {
  char path[] = "/tmp/chorus-log-XXXXXX";
  const int file = mkstemp(path);
  REQUIRE(file >= 0);
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(file, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

void small_and_large(Comm& comm) {
  std::vector<float> small(4, 1.0f);
  std::vector<float> large(1 << 16, 1.0f);
  for (int i = 0; i < 3; ++i) comm.all_reduce(small.data(), small.data(), small.size(), ReduceOp::sum);
  comm.all_reduce(large.data(), large.data(), large.size(), ReduceOp::sum);
  comm.all_reduce(small.data(), small.data(), small.size(), ReduceOp::sum, Algorithm::tree);
  Comm half = comm.split(comm.rank() % 2, 0);
  half.barrier();
}

}  // namespace

TEST_CASE("CHORUS_LOG=info says which algorithm and why, once per choice", "[log][host]") {
  harness::ScopedEnv level("CHORUS_LOG", "info");
  Team team(4);
  const std::string text = captured_stderr([&] { harness::run(team, small_and_large); });
  INFO(text);
  CHECK(occurrences(text, "chorus INFO: communicator ") >= 6);
  CHECK_THAT(text, Contains(": team of 4 ranks, flight recorder of 2048 calls per rank"));
  CHECK(occurrences(text, "all_reduce 4 x float32 sum one_shot in place (16 B, 4 ranks): one_shot because small: "
                          "(ranks-1) x bytes <= 64 KiB") == 1);
  CHECK(occurrences(text, "all_reduce 65536 x float32 sum ") == 1);  // 256 KiB: the ring or two_shot, by cores
  CHECK_THAT(text, Contains("all_reduce 4 x float32 sum tree in place (16 B, 4 ranks): tree because asked for by "
                            "the caller"));
  CHECK(occurrences(text, "ranks split from communicator ") == 2);
  CHECK_THAT(text, Contains(": 2 ranks split from communicator "));
  CHECK(text.find("DEBUG") == std::string::npos);
}

TEST_CASE("CHORUS_LOG=debug adds the schedule; warn says nothing of this", "[log][host]") {
  Team team(2);
  {
    harness::ScopedEnv level("CHORUS_LOG", "debug");
    const std::string text = captured_stderr([&] {
      harness::run(team, [](Comm& comm) {
        std::vector<std::int32_t> data(8, 1);
        comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
      });
    });
    INFO(text);
    CHECK_THAT(text, Contains("chorus DEBUG: schedule:\nall_reduce ring, 2 ranks, count 8"));
    CHECK_THAT(text, Contains("rank  step  op"));
  }
  harness::ScopedEnv level("CHORUS_LOG", "warn");
  const std::string quiet = captured_stderr([&] { harness::run(team, small_and_large); });
  CHECK(quiet.empty());
}

// At the default level a call that misses the schedule cache must cost nothing for logging: no
// description of the call, no getenv. The level is read when the run starts; a CHORUS_LOG made
// malformed in the middle of the run shows any later read of it (log_level() throws on a bad value).
TEST_CASE("a schedule-cache miss at the default level does not read CHORUS_LOG", "[log][host]") {
  harness::ScopedEnv level("CHORUS_LOG", "");  // unset: warn
  Team team(1);  // one rank thread: nothing else reads the environment while it changes
  std::string error;
  std::vector<float> result;
  const std::string text = captured_stderr([&] {
    harness::run(team, [&](Comm& comm) {
      setenv("CHORUS_LOG", "bogus", 1);
      try {
        std::vector<float> data(37, 2.0f);
        comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);  // misses
        comm.all_reduce(data.data(), data.data(), 5, ReduceOp::max, Algorithm::tree);           // misses
        result = data;
      } catch (const chorus::Error& e) {
        error = e.what();
      }
    });
  });
  CHECK(error == "");
  CHECK(text.empty());
  REQUIRE(result.size() == 37);
  CHECK(result[0] == 2.0f);
}

// An explicit CHORUS_TRACE_BUFFER is held to the team's 64 MiB of recorders, with a warning saying so.
TEST_CASE("CHORUS_TRACE_BUFFER is capped to the team's recorder budget", "[log][host][env]") {
  using chorus::host::detail::recorder_capacity;
  harness::ScopedEnv buffer("CHORUS_TRACE_BUFFER", "1048576");
  CHECK(recorder_capacity(1) == 1048576);  // 64 MiB: exactly the budget
  std::string text = captured_stderr([&] { CHECK(recorder_capacity(2) == 524288); });
  CHECK_THAT(text, Contains("chorus WARN: CHORUS_TRACE_BUFFER=1048576 for a team of 2 ranks would take 128 MiB; "
                            "keeping 524288 calls per rank (the team's recorders are held to 64 MiB)"));
  text = captured_stderr([&] { CHECK(recorder_capacity(4096) == 256); });
  CHECK_THAT(text, Contains("keeping 256 calls per rank"));
  {
    harness::ScopedEnv small("CHORUS_TRACE_BUFFER", "100");
    text = captured_stderr([&] { CHECK(recorder_capacity(4096) == 100); });  // within the budget: as asked
    CHECK(text.empty());
  }
  harness::ScopedEnv level("CHORUS_LOG", "info");
  text = captured_stderr([&] {
    Team pair(2);
    harness::run(pair, [](Comm&) {});
  });
  CHECK_THAT(text, Contains("team of 2 ranks, flight recorder of 524288 calls per rank"));
}

}  // namespace test_logging
