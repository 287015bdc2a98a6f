// Faults: a rank that throws releases its peers within a second (chorus::Error, peer_failed,
// naming it), Team::run rethrows the original exception, a rank that never calls makes the
// others time out with a message naming who waited for whom at which step, and a Team is
// usable again after every kind of failure.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "harness.hpp"

namespace test_faults {

namespace {

using chorus::Algorithm;
using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;
using Clock = std::chrono::steady_clock;

struct Outcome {
  bool threw = false;
  ErrorCode code = ErrorCode::internal;
  std::string message;
  Clock::time_point when{};
};

// A correct all_reduce on every rank: the team works.
void expect_team_works(Team& team) {
  std::vector<int> sums(static_cast<std::size_t>(team.size()));
  harness::run(team, [&](Comm& c) {
    int x = c.rank();
    c.all_reduce(&x, &sums[static_cast<std::size_t>(c.rank())], 1, ReduceOp::sum);
    c.barrier();
  });
  for (int s : sums) CHECK(s == team.size() * (team.size() - 1) / 2);
}

}  // namespace

TEST_CASE("a rank that throws releases its peers promptly and Team::run rethrows it", "[faults]") {
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::one_shot, Algorithm::tree}) {
    const int ranks = 4;
    const int culprit = 2;
    Team team(ranks);
    std::vector<Outcome> outcomes(ranks);
    std::atomic<long long> thrown_at{0};
    bool rethrown = false;
    try {
      harness::run(team, [&](Comm& c) {
        Outcome& o = outcomes[static_cast<std::size_t>(c.rank())];
        if (c.rank() == culprit) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the others start waiting
          thrown_at = Clock::now().time_since_epoch().count();
          throw std::runtime_error("boom on purpose");
        }
        std::vector<float> data(5000, 1.0f);
        try {
          c.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, algorithm);
        } catch (const Error& e) {
          o.when = Clock::now();
          o.threw = true;
          o.code = e.code();
          o.message = e.what();
          throw;
        }
      });
    } catch (const std::runtime_error& e) {
      rethrown = std::string(e.what()) == "boom on purpose";
    }
    CHECK(rethrown);
    for (int r = 0; r < ranks; ++r) {
      if (r == culprit) continue;
      const Outcome& o = outcomes[static_cast<std::size_t>(r)];
      INFO(chorus::to_string(algorithm) << " rank " << r << ": " << o.message);
      CHECK(o.threw);
      CHECK(o.code == ErrorCode::peer_failed);
      CHECK(o.message.find("rank " + std::to_string(culprit) + " failed") != std::string::npos);
      CHECK(o.message.find("boom on purpose") != std::string::npos);
      const auto delay = o.when - Clock::time_point(Clock::duration(thrown_at.load()));
      CHECK(delay < std::chrono::seconds(1));
    }
    expect_team_works(team);
  }
}

TEST_CASE("Team::run rethrows exceptions that are not std::exception", "[faults]") {
  Team team(3);
  bool caught = false;
  try {
    harness::run(team, [](Comm& c) {
      if (c.rank() == 0) throw 42;
      c.barrier();
    });
  } catch (int value) {
    caught = value == 42;
  }
  CHECK(caught);
  expect_team_works(team);
}

TEST_CASE("a rank failing after the others finished still fails the run", "[faults]") {
  Team team(3);
  CHECK_THROWS_AS(harness::run(team,
                               [](Comm& c) {
                                 c.barrier();
                                 if (c.rank() == 1) throw std::logic_error("late");
                               }),
                  std::logic_error);
  expect_team_works(team);
}

TEST_CASE("a rank that never calls makes the others time out, naming rank, peer and step", "[faults]") {
  harness::ScopedEnv env("CHORUS_TIMEOUT_MS", "200");
  SECTION("two ranks: the waiting rank names the hung peer and the step") {
    Team team(2);
    std::vector<Outcome> outcomes(2);
    std::string rethrown;
    ErrorCode rethrown_code = ErrorCode::internal;
    try {
      harness::run(team, [&](Comm& c) {
        if (c.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
          return;
        }
        std::vector<double> data(100, 1.0);
        try {
          c.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
        } catch (const Error& e) {
          outcomes[0] = Outcome{true, e.code(), e.what(), Clock::now()};
          throw;
        }
      });
    } catch (const Error& e) {
      rethrown = e.what();
      rethrown_code = e.code();
    }
    INFO(outcomes[0].message);
    CHECK(outcomes[0].code == ErrorCode::timeout);
    CHECK(outcomes[0].message.find("all_reduce on rank 0") != std::string::npos);
    CHECK(outcomes[0].message.find("timed out after 200 ms") != std::string::npos);
    CHECK(outcomes[0].message.find("waiting for rank 1") != std::string::npos);
    CHECK(outcomes[0].message.find("step") != std::string::npos);
    CHECK(rethrown_code == ErrorCode::timeout);
    CHECK(rethrown == outcomes[0].message);
  }
  SECTION("several ranks: every waiting rank gets a timeout error") {
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::two_shot}) {
      const int ranks = 5;
      Team team(ranks);
      std::vector<Outcome> outcomes(ranks);
      const auto start = Clock::now();
      std::string rethrown;
      try {
        harness::run(team, [&](Comm& c) {
          if (c.rank() == 3) {
            std::this_thread::sleep_for(std::chrono::milliseconds(800));
            return;
          }
          std::vector<int> data(50, 1);
          try {
            c.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, algorithm);
          } catch (const Error& e) {
            outcomes[static_cast<std::size_t>(c.rank())] = Outcome{true, e.code(), e.what(), Clock::now()};
            throw;
          }
        });
      } catch (const Error& e) {
        rethrown = e.what();
      }
      // Ranks blocked on ranks that are themselves blocked let those report first, so the error
      // Team::run rethrows names the rank that is really missing.
      INFO(rethrown);
      CHECK(rethrown.find("waiting for rank 3") != std::string::npos);
      for (int r = 0; r < ranks; ++r) {
        if (r == 3) continue;
        const Outcome& o = outcomes[static_cast<std::size_t>(r)];
        INFO(chorus::to_string(algorithm) << " rank " << r << ": " << o.message);
        CHECK(o.threw);
        CHECK(o.code == ErrorCode::timeout);
        CHECK(o.message.find("timed out") != std::string::npos);
        CHECK(o.when - start < std::chrono::seconds(5));
      }
      expect_team_works(team);
    }
  }
  SECTION("a barrier names the rank that has not arrived") {
    Team team(3);
    std::string message;
    try {
      harness::run(team, [&](Comm& c) {
        if (c.rank() == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
          return;
        }
        c.barrier();
      });
    } catch (const Error& e) {
      message = e.what();
      CHECK(e.code() == ErrorCode::timeout);
    }
    INFO(message);
    CHECK(message.find("barrier on rank") != std::string::npos);
    CHECK(message.find("waiting for rank 2") != std::string::npos);
  }
}

TEST_CASE("a failure inside a sub-communicator releases ranks waiting elsewhere", "[faults]") {
  Team team(4);
  std::vector<Outcome> outcomes(4);
  CHECK_THROWS_AS(harness::run(team,
                               [&](Comm& c) {
                                 try {
                                   Comm half = c.split(c.rank() % 2, 0);
                                   if (c.rank() == 1) throw std::runtime_error("sub failure");
                                   int x = 1;
                                   if (c.rank() == 3) {
                                     half.all_reduce(&x, &x, 1, ReduceOp::sum);  // waits for rank 1
                                   } else {
                                     c.barrier();  // the parent waits for everyone
                                   }
                                 } catch (const Error& e) {
                                   outcomes[static_cast<std::size_t>(c.rank())] =
                                       Outcome{true, e.code(), e.what(), Clock::now()};
                                   throw;
                                 }
                               }),
                  std::runtime_error);
  for (int r : {0, 2, 3}) {
    INFO("rank " << r << ": " << outcomes[static_cast<std::size_t>(r)].message);
    CHECK(outcomes[static_cast<std::size_t>(r)].code == ErrorCode::peer_failed);
    CHECK(outcomes[static_cast<std::size_t>(r)].message.find("sub failure") != std::string::npos);
  }
  expect_team_works(team);
}

TEST_CASE("Team::run may not be re-entered while it runs", "[faults]") {
  Team team(2);
  std::vector<int> refused(2, 0);
  harness::run(team, [&](Comm& c) {
    try {
      team.run([](Comm&) {});
    } catch (const Error& e) {
      refused[static_cast<std::size_t>(c.rank())] = e.code() == ErrorCode::invalid_argument;
    }
  });
  CHECK(refused[0] == 1);
  CHECK(refused[1] == 1);
  expect_team_works(team);
}

}  // namespace test_faults
