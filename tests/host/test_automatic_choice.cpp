// Team::set_automatic: the function decides what Algorithm::automatic runs (seen in the flight
// record), for split communicators too; a model::AutomaticTuner plugs in; wrong answers fail the
// call on every rank with invalid_argument; an empty function restores the measured thresholds.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chorus/model/automatic.hpp>

#include "harness.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace test_automatic_choice {

using namespace chorus;
using chorus::host::Comm;
using chorus::host::Team;
using json = nlohmann::json;

namespace {

// The algorithm each recorded call of every rank ran, read from Team::dump_trace after the run.
std::vector<std::vector<std::string>> recorded_algorithms(const Team& team) {
  char name[] = "/tmp/chorus-automatic-XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  team.dump_trace(name);
  std::ifstream file(name);
  const json record = json::parse(file);
  std::remove(name);
  std::vector<std::vector<std::string>> algorithms;
  for (const json& rank : record["ranks"]) {
    algorithms.emplace_back();
    for (const json& call : rank["calls"]) algorithms.back().push_back(call["algorithm"].get<std::string>());
  }
  return algorithms;
}

// Runs one float all_reduce (sum, `count` elements, automatic) on every rank; returns how many
// ranks got the right sums.
int all_reduce_once(Team& team, std::size_t count) {
  std::atomic<int> right{0};
  harness::run(team, [&](Comm& comm) {
    std::vector<float> in(count, static_cast<float>(comm.rank() + 1)), out(count, -1.0f);
    comm.all_reduce(in.data(), out.data(), count, ReduceOp::sum);
    const float expected = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
    bool ok = true;
    for (const float v : out) ok = ok && v == expected;
    if (ok) ++right;
  });
  return right.load();
}

}  // namespace

TEST_CASE("the team's automatic function decides what automatic runs") {
  Team team(4);
  std::atomic<int> asked{0};
  team.set_automatic([&](Collective collective, std::size_t count, std::size_t element_size, int ranks) {
    ++asked;
    const bool expected_call = collective == Collective::all_reduce && count == 1000 && element_size == 4 && ranks == 4;
    return expected_call ? Algorithm::tree : Algorithm::ring;
  });
  CHECK(all_reduce_once(team, 1000) == 4);
  CHECK(asked.load() == 4);  // every rank asks
  for (const auto& rank : recorded_algorithms(team)) CHECK(rank == std::vector<std::string>{"tree"});

  // Forced algorithms are not asked about.
  asked = 0;
  harness::run(team, [&](Comm& comm) {
    std::vector<float> in(10, 1.0f), out(10);
    comm.all_reduce(in.data(), out.data(), 10, ReduceOp::sum, Algorithm::halving_doubling);
  });
  CHECK(asked.load() == 0);
  for (const auto& rank : recorded_algorithms(team)) CHECK(rank == std::vector<std::string>{"halving_doubling"});
}

TEST_CASE("split communicators use the team's automatic function") {
  Team team(4);
  team.set_automatic([](Collective, std::size_t, std::size_t, int ranks) {
    return ranks == 2 ? Algorithm::ring : Algorithm::tree;  // the thresholds would run one_shot here
  });
  char directory[] = "/tmp/chorus-automatic-split-XXXXXX";
  REQUIRE(mkdtemp(directory) != nullptr);
  const std::string paths[2] = {std::string(directory) + "/0.json", std::string(directory) + "/1.json"};
  std::atomic<int> right{0};
  harness::run(team, [&](Comm& comm) {
    Comm half = comm.split(comm.rank() % 2, comm.rank());
    std::vector<double> in(33, 1.0), out(33);
    half.all_reduce(in.data(), out.data(), 33, ReduceOp::sum);
    if (half.rank() == 0) half.dump_trace(paths[comm.rank() % 2]);
    if (out == std::vector<double>(33, 2.0)) ++right;
  });
  CHECK(right.load() == 4);
  for (const std::string& path : paths) {
    std::ifstream file(path);
    REQUIRE(file.good());
    const json record = json::parse(file);
    REQUIRE(record["ranks"].size() == 2);
    for (const json& rank : record["ranks"]) {
      REQUIRE(rank["calls"].size() == 1);
      CHECK(rank["calls"][0]["algorithm"] == "ring");
    }
    std::remove(path.c_str());
  }
  std::remove(directory);
}

TEST_CASE("a model::AutomaticTuner decides through set_automatic") {
  const model::AutomaticTuner tuner = model::AutomaticTuner::uniform(3.0, 5.0, host::detail::Tuning::kSliceBytes);
  Team team(3);
  team.set_automatic(tuner);
  for (const std::size_t count : {std::size_t{1}, std::size_t{5000}, std::size_t{1} << 20}) {
    INFO(count << " floats");
    CHECK(all_reduce_once(team, count) == 3);
    const std::string expected = to_string(tuner(Collective::all_reduce, count, 4, 3));
    for (const auto& rank : recorded_algorithms(team)) CHECK(rank == std::vector<std::string>{expected});
  }
  CHECK(tuner.cached_answers() == 3);
}

TEST_CASE("an answer that is not an algorithm of the collective fails the call on every rank") {
  for (const Algorithm bad : {Algorithm::automatic, Algorithm::chain}) {
    INFO(to_string(bad));
    Team team(3);
    team.set_automatic([bad](Collective, std::size_t, std::size_t, int) { return bad; });
    std::atomic<int> refused{0};
    std::vector<std::string> messages(3);
    harness::run(team, [&](Comm& comm) {
      std::vector<float> data(8, 1.0f);
      try {
        comm.all_reduce(data.data(), data.data(), 8, ReduceOp::sum);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::invalid_argument) ++refused;
        messages[static_cast<std::size_t>(comm.rank())] = e.what();
      }
    });
    CHECK(refused.load() == 3);
    for (const std::string& message : messages) {
      CHECK_THAT(message, Catch::Contains("all_reduce") && Catch::Contains("Team::set_automatic") &&
                              Catch::Contains("answered " + std::string(to_string(bad))));
    }
  }
}

TEST_CASE("an empty function restores the thresholds, and no change while running") {
  Team team(2);
  team.set_automatic([](Collective, std::size_t, std::size_t, int) { return Algorithm::tree; });
  team.set_automatic(nullptr);
  CHECK(all_reduce_once(team, 100) == 2);
  const std::string thresholds =
      algo::to_string(host::detail::choose_pattern(Collective::all_reduce, 400, 2, 2));
  for (const auto& rank : recorded_algorithms(team)) CHECK(rank == std::vector<std::string>{thresholds});

  std::atomic<int> refused{0};
  harness::run(team, [&](Comm& comm) {
    if (comm.rank() != 0) return;
    try {
      team.set_automatic([](Collective, std::size_t, std::size_t, int) { return Algorithm::ring; });
    } catch (const Error&) {
      ++refused;
    }
  });
  CHECK(refused.load() == 1);
}

}  // namespace test_automatic_choice
