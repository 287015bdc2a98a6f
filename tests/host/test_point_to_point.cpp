// send/recv: synchronous point-to-point messages, in order per pair, independent of the
// collective sequence; count or type mismatches fail both sides; two ranks that both send first
// time out (as documented) instead of hanging.
#include <catch2/catch.hpp>

#include <string>

#include "harness.hpp"

namespace test_point_to_point {

namespace {

using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

}  // namespace

TEST_CASE("every pair exchanges every type", "[p2p]") {
  const int ranks = 4;
  Team team(ranks);
  std::vector<int> wrong(ranks, 0);
  harness::run(team, [&](Comm& c) {
    harness::for_each_type([&](auto type, int) {
      using T = decltype(type);
      // Pairs in one global order, so each send meets its recv without a cycle.
      for (int a = 0; a < ranks; ++a) {
        for (int b = 0; b < ranks; ++b) {
          if (a == b) continue;
          const std::size_t count = static_cast<std::size_t>(a * 5 + b);
          const std::vector<T> message = harness::inputs<T>(ReduceOp::min, a * 7 + b, count);
          if (c.rank() == a) c.send(message.data(), count, b);
          if (c.rank() == b) {
            std::vector<T> got(count, harness::sentinel<T>());
            c.recv(got.data(), count, a);
            if (!harness::same_bits(got, message)) ++wrong[static_cast<std::size_t>(c.rank())];
          }
        }
      }
    });
  });
  for (int w : wrong) CHECK(w == 0);
}

TEST_CASE("messages between a pair arrive in order, around a token ring, and between collectives", "[p2p]") {
  const int ranks = 5;
  Team team(ranks);
  std::vector<std::vector<int>> seen(ranks);
  std::vector<int> totals(ranks);
  harness::run(team, [&](Comm& c) {
    const int r = c.rank();
    const int next = (r + 1) % ranks;
    const int prev = (r + ranks - 1) % ranks;
    for (int round = 0; round < 20; ++round) {
      int token = 0;
      if (r == 0) {
        token = round * 100;
        c.send(&token, 1, next);
        c.recv(&token, 1, prev);
      } else {
        c.recv(&token, 1, prev);
        seen[static_cast<std::size_t>(r)].push_back(token);
        token += 1;
        c.send(&token, 1, next);
      }
      if (r == 0) seen[0].push_back(token);
      int one = 1;
      c.all_reduce(&one, &totals[static_cast<std::size_t>(r)], 1, ReduceOp::sum);  // interleaved collective
    }
    // Zero-length messages still rendezvous; null is fine with count 0.
    if (r == 0) c.send<double>(nullptr, 0, 1);
    if (r == 1) c.recv<double>(nullptr, 0, 0);
  });
  for (int r = 0; r < ranks; ++r) {
    REQUIRE(seen[static_cast<std::size_t>(r)].size() == 20);
    for (int round = 0; round < 20; ++round) {
      const int expected = r == 0 ? round * 100 + ranks - 1 : round * 100 + r - 1;
      CHECK(seen[static_cast<std::size_t>(r)][static_cast<std::size_t>(round)] == expected);
    }
    CHECK(totals[static_cast<std::size_t>(r)] == ranks);
  }
}

TEST_CASE("a count or type mismatch fails both sides with mismatch, and every later call throws", "[p2p]") {
  // Repeated: which side sees the failure first is a race, and the outcome must not depend on it.
  for (int round = 0; round < 50; ++round) {
    Team team(2);
    std::vector<std::string> messages(2), later(2);
    std::vector<int> codes(2, -1), later_codes(2, -1);
    harness::run(team, [&](Comm& c) {
      const auto r = static_cast<std::size_t>(c.rank());
      std::vector<float> data(8, 2.5f);
      try {
        if (c.rank() == 0) c.send(data.data(), 8, 1);
        if (c.rank() == 1) c.recv(data.data(), 7, 0);
      } catch (const Error& e) {
        messages[r] = e.what();
        codes[r] = static_cast<int>(e.code());
      }
      // The run has failed: a matching exchange and a collective both throw now.
      int value = 41 + c.rank();
      try {
        if (c.rank() == 0) c.send(&value, 1, 1);
        if (c.rank() == 1) c.recv(&value, 1, 0);
        c.barrier();
      } catch (const Error& e) {
        later[r] = e.what();
        later_codes[r] = static_cast<int>(e.code());
      }
    });
    const int mismatch = static_cast<int>(ErrorCode::mismatch);
    for (int r = 0; r < 2; ++r) {
      const auto i = static_cast<std::size_t>(r);
      INFO("round " << round << " rank " << r << ": " << messages[i] << " | later: " << later[i]);
      REQUIRE(codes[i] == mismatch);
      REQUIRE(later_codes[i] == mismatch);
      REQUIRE(messages[i].find("7 float32") != std::string::npos);
      REQUIRE(messages[i].find("8 float32") != std::string::npos);
    }
    REQUIRE(messages[0].find("chorus::send on rank 0") == 0);
    REQUIRE(messages[1].find("chorus::recv on rank 1: expected 7 float32 from rank 0, which sent 8 float32") == 0);
  }
}

TEST_CASE("two ranks that both send first time out instead of hanging", "[p2p]") {
  harness::ScopedEnv env("CHORUS_TIMEOUT_MS", "200");
  Team team(2);
  std::string message;
  try {
    harness::run(team, [](Comm& c) {
      int x = c.rank();
      c.send(&x, 1, 1 - c.rank());
      c.recv(&x, 1, 1 - c.rank());
    });
  } catch (const Error& e) {
    message = e.what();
    CHECK(e.code() == ErrorCode::timeout);
  }
  INFO(message);
  CHECK(message.find("chorus::send on rank") != std::string::npos);
  CHECK(message.find("synchronous") != std::string::npos);
  // And the team is fine afterwards.
  std::vector<int> got(2, -1);
  harness::run(team, [&](Comm& c) {
    int x = 7;
    if (c.rank() == 0) c.send(&x, 1, 1);
    if (c.rank() == 1) c.recv(&got[1], 1, 0);
  });
  CHECK(got[1] == 7);
}

}  // namespace test_point_to_point
