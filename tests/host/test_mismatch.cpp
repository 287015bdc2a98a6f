// Ranks that disagree at the same call (collective, count, type, op, root, algorithm, in-place
// choice) all get chorus::Error with code mismatch: never a hang, never wrong data, and the
// detecting rank's message names both ranks and the differing values.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "harness.hpp"

namespace test_mismatch {

namespace {

using chorus::Algorithm;
using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

struct Outcome {
  bool threw = false;
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

// Every rank runs `call(comm)` and catches what it throws. Team::run must then not throw.
std::vector<Outcome> each_rank(int ranks, const std::function<void(Comm&)>& call) {
  Team team(ranks);
  std::vector<Outcome> outcomes(static_cast<std::size_t>(ranks));
  harness::run(team, [&](Comm& comm) {
    try {
      call(comm);
    } catch (const Error& e) {
      Outcome& o = outcomes[static_cast<std::size_t>(comm.rank())];
      o.threw = true;
      o.code = e.code();
      o.message = e.what();
    }
  });
  return outcomes;
}

// Checks every rank failed with `mismatch` and some message names the culprit and `detail`.
void expect_mismatch(int ranks, int culprit, const std::function<void(Comm&)>& call, const std::string& detail) {
  const std::vector<Outcome> outcomes = each_rank(ranks, call);
  bool named = false;
  for (int r = 0; r < ranks; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.message);
    CHECK(o.threw);
    CHECK(o.code == ErrorCode::mismatch);
    named = named || (o.message.find("rank " + std::to_string(culprit)) != std::string::npos &&
                      o.message.find(detail) != std::string::npos);
  }
  INFO("no message names rank " << culprit << " and '" << detail << "'");
  CHECK(named);
}

}  // namespace

TEST_CASE("a rank calling a different collective", "[mismatch]") {
  for (int ranks : {2, 3, 4, 7}) {
    const int culprit = ranks - 1;
    expect_mismatch(ranks, culprit,
                    [&](Comm& c) {
                      std::vector<float> a(64, 1.0f), b(64);
                      if (c.rank() == culprit) {
                        c.broadcast(a.data(), b.data(), 64, 0);
                      } else {
                        c.all_reduce(a.data(), b.data(), 64, ReduceOp::sum);
                      }
                    },
                    "collective");
  }
}

TEST_CASE("a rank with a different count, type, op, root or algorithm", "[mismatch]") {
  for (int ranks : {2, 4, 5}) {
    const int culprit = 1;
    for (Algorithm algorithm : harness::kAlgorithms) {
      expect_mismatch(ranks, culprit,
                      [&](Comm& c) {
                        std::vector<float> a(100, 1.0f), b(100);
                        c.all_reduce(a.data(), b.data(), c.rank() == culprit ? 99 : 100, ReduceOp::sum, algorithm);
                      },
                      "count");
    }
    expect_mismatch(ranks, culprit,
                    [&](Comm& c) {
                      std::vector<float> f(16, 1.0f);
                      std::vector<std::int32_t> i(16, 1);
                      if (c.rank() == culprit) {
                        c.all_reduce(i.data(), i.data(), 16, ReduceOp::sum);
                      } else {
                        c.all_reduce(f.data(), f.data(), 16, ReduceOp::sum);
                      }
                    },
                    "type");
    expect_mismatch(ranks, culprit,
                    [&](Comm& c) {
                      std::vector<double> a(16, 1.0), b(16);
                      c.reduce_scatter(a.data(), b.data(), 16 / static_cast<std::size_t>(c.size()),
                                       c.rank() == culprit ? ReduceOp::max : ReduceOp::sum);
                    },
                    "op");
    expect_mismatch(ranks, culprit,
                    [&](Comm& c) {
                      std::vector<int> a(16, 1);
                      c.broadcast(a.data(), a.data(), 16, c.rank() == culprit ? 1 : 0);
                    },
                    "root");
    expect_mismatch(ranks, culprit,
                    [&](Comm& c) {
                      std::vector<int> a(16, 1);
                      c.reduce(a.data(), a.data(), 16, ReduceOp::sum, c.rank() == culprit ? 0 : c.size() - 1);
                    },
                    "root");
    expect_mismatch(ranks, culprit,
                    [&](Comm& c) {
                      std::vector<float> a(1000, 1.0f), b(1000);
                      c.all_reduce(a.data(), b.data(), 1000, ReduceOp::sum,
                                   c.rank() == culprit ? Algorithm::tree : Algorithm::ring);
                    },
                    "algorithm");
  }
}

TEST_CASE("a rank differing only in the in-place choice of all_reduce", "[mismatch]") {
  // Documented host-backend rule: some patterns stage data differently in place.
  expect_mismatch(3, 2,
                  [](Comm& c) {
                    std::vector<float> a(10, 1.0f), b(10);
                    c.all_reduce(a.data(), c.rank() == 2 ? a.data() : b.data(), 10, ReduceOp::sum,
                                 Algorithm::one_shot);
                  },
                  "in-place");
}

TEST_CASE("a mismatch with a rank that exchanges nothing with the culprit still fails every rank",
          "[mismatch]") {
  // Ring over 6 ranks: ranks far from the culprit never read from it, yet must not return
  // normally from a call that was not the same call everywhere.
  expect_mismatch(6, 3,
                  [](Comm& c) {
                    std::vector<std::uint8_t> a(6000, 1), b(6000);
                    c.all_reduce(a.data(), b.data(), c.rank() == 3 ? 5999 : 6000, ReduceOp::max, Algorithm::ring);
                  },
                  "count");
}

TEST_CASE("a barrier against a collective", "[mismatch]") {
  expect_mismatch(4, 0,
                  [](Comm& c) {
                    int x = 1;
                    if (c.rank() == 0) {
                      c.barrier();
                    } else {
                      c.all_reduce(&x, &x, 1, ReduceOp::sum);
                    }
                  },
                  "collective");
}

TEST_CASE("a rank that returns while others still call", "[mismatch]") {
  // Rank 2 makes one call fewer: the others must not wait for it until the timeout.
  harness::ScopedEnv env("CHORUS_TIMEOUT_MS", "60000");
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = each_rank(3, [](Comm& c) {
    int x = 1;
    c.all_reduce(&x, &x, 1, ReduceOp::sum);
    if (c.rank() != 2) c.all_reduce(&x, &x, 1, ReduceOp::sum);
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  for (int r = 0; r < 2; ++r) {
    INFO(outcomes[static_cast<std::size_t>(r)].message);
    CHECK(outcomes[static_cast<std::size_t>(r)].threw);
    CHECK(outcomes[static_cast<std::size_t>(r)].code == ErrorCode::mismatch);
  }
  CHECK_FALSE(outcomes[2].threw);
}

TEST_CASE("Team::run rethrows the mismatch and the team works afterwards", "[mismatch]") {
  Team team(4);
  try {
    harness::run(team, [](Comm& c) {
      std::vector<float> a(8, 1.0f);
      c.all_reduce(a.data(), a.data(), c.rank() == 2 ? 7 : 8, ReduceOp::sum);
    });
    FAIL("Team::run returned normally");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::mismatch);
    CHECK(std::string(e.what()).find("count") != std::string::npos);
  }
  std::vector<float> sums(4);
  harness::run(team, [&](Comm& c) {
    float x = 1.0f;
    c.all_reduce(&x, &sums[static_cast<std::size_t>(c.rank())], 1, ReduceOp::sum);
  });
  for (float s : sums) CHECK(s == 4.0f);
}

}  // namespace test_mismatch
