// Team and Comm as types: every rank on its own thread, rank() and size(), Comm movable and not
// copyable, a Team reusable for many runs.
#include <catch2/catch.hpp>

#include <mutex>
#include <set>
#include <thread>
#include <type_traits>

#include "harness.hpp"

namespace test_team {

using chorus::host::Comm;
using chorus::host::Team;

static_assert(std::is_move_constructible<Comm>::value && std::is_move_assignable<Comm>::value,
              "Comm is a movable per-rank handle");
static_assert(!std::is_copy_constructible<Comm>::value && !std::is_copy_assignable<Comm>::value,
              "copying a Comm would split its sequence numbers");
static_assert(std::is_move_constructible<Team>::value && !std::is_copy_constructible<Team>::value, "");

TEST_CASE("run calls fn once per rank, each on its own thread", "[team]") {
  for (int ranks : {1, 2, 5, 16}) {
    Team team(ranks);
    CHECK(team.size() == ranks);
    std::mutex mutex;
    std::set<int> seen;
    std::set<std::thread::id> threads;
    std::vector<int> sizes(static_cast<std::size_t>(ranks), 0);
    harness::run(team, [&](Comm& comm) {
      std::lock_guard<std::mutex> lock(mutex);
      seen.insert(comm.rank());
      threads.insert(std::this_thread::get_id());
      sizes[static_cast<std::size_t>(comm.rank())] = comm.size();
    });
    CHECK(static_cast<int>(seen.size()) == ranks);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == ranks - 1);
    CHECK(static_cast<int>(threads.size()) == ranks);
    CHECK(threads.count(std::this_thread::get_id()) == 0);
    for (int s : sizes) CHECK(s == ranks);
  }
}

TEST_CASE("a Comm moved within its rank keeps working", "[team]") {
  Team team(3);
  std::vector<int> sums(3);
  harness::run(team, [&](Comm& comm) {
    int x = comm.rank() + 1;
    comm.all_reduce(&x, &x, 1, chorus::ReduceOp::sum);
    Comm moved(std::move(comm));
    Comm target;
    target = std::move(moved);
    target.all_reduce(&x, &sums[static_cast<std::size_t>(target.rank())], 1, chorus::ReduceOp::sum);
  });
  for (int s : sums) CHECK(s == 18);
}

TEST_CASE("a Team runs many times, and moved", "[team]") {
  Team team(4);
  for (int run = 0; run < 20; ++run) {
    std::vector<int> got(4);
    harness::run(team, [&](Comm& comm) {
      int x = run;
      comm.all_reduce(&x, &got[static_cast<std::size_t>(comm.rank())], 1, chorus::ReduceOp::max);
    });
    for (int g : got) CHECK(g == run);
  }
  Team moved(std::move(team));
  std::vector<int> got(4);
  harness::run(moved, [&](Comm& comm) {
    int x = 1;
    comm.all_reduce(&x, &got[static_cast<std::size_t>(comm.rank())], 1, chorus::ReduceOp::sum);
  });
  for (int g : got) CHECK(g == 4);
}

TEST_CASE("team sizes are bounded with a clear error, not bad_alloc", "[team]") {
  using chorus::host::Team;
  CHECK_THROWS_WITH(Team(0), "chorus::host::Team: size must be 1 to 4096, got 0");
  CHECK_THROWS_WITH(Team(-3), Catch::Contains("got -3"));
  CHECK_THROWS_WITH(Team(Team::kMaxSize + 1), Catch::Contains("got 4097"));
  CHECK_THROWS_AS(Team(100000), chorus::Error);
}

TEST_CASE("a running team cannot be moved; a moved-from team cannot run", "[team]") {
  using chorus::host::Team;
  Team team(2);
  std::vector<std::string> refusals;
  std::atomic<bool> go{false};
  harness::run(team, [&](chorus::host::Comm& comm) {
    if (comm.rank() == 0) {
      try {
        Team stolen(std::move(team));
      } catch (const chorus::Error& e) {
        refusals.push_back(e.what());
      }
      try {
        Team other(1);
        other = std::move(team);
      } catch (const chorus::Error& e) {
        refusals.push_back(e.what());
      }
      go = true;
    }
    while (!go) std::this_thread::yield();
    comm.barrier();  // the team still works
  });
  REQUIRE(refusals.size() == 2);
  CHECK(refusals[0] == "chorus::host::Team: cannot move a team while it is running");
  CHECK(refusals[1] == "chorus::host::Team: cannot move a team while it is running");
  Team moved(std::move(team));  // idle: allowed
  int runs = 0;
  moved.run([&](chorus::host::Comm& comm) {
    if (comm.rank() == 0) ++runs;
  });
  CHECK(runs == 1);
  CHECK_THROWS_WITH(team.run([](chorus::host::Comm&) {}), Catch::Contains("moved from"));  // NOLINT: use after move is the test
}

TEST_CASE("a typo in CHORUS_LOG is caught when a team runs, even if nothing logs", "[team]") {
  harness::ScopedEnv log("CHORUS_LOG", "verbose");
  chorus::host::Team team(2);
  bool ran = false;
  CHECK_THROWS_WITH(team.run([&](chorus::host::Comm&) { ran = true; }),
                    Catch::StartsWith("chorus::host::Team::run: chorus: CHORUS_LOG must be none, warn, info or debug, "
                                      "got 'verbose'"));
  CHECK_FALSE(ran);
}

}  // namespace test_team
