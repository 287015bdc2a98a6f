// Team and Comm as types: every rank on its own thread, rank() and size(), Comm movable and not
// copyable, a Team reusable for many runs.
#include <catch2/catch.hpp>

#include <mutex>
#include <set>
#include <thread>
#include <type_traits>

#include "harness.hpp"

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
