// Invalid arguments: chorus::Error (invalid_argument) on the calling rank, before any
// communication, with a message naming the call, the rank and the bad value. Every rank makes
// the same bad call and catches it; a correct all_reduce afterwards proves no rank communicated.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "harness.hpp"

namespace test_validation {

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
  bool still_works = false;
};

// Runs `bad(comm)` on every rank of a `ranks`-rank team, then a correct all_reduce.
std::vector<Outcome> each_rank(int ranks, const std::function<void(Comm&)>& bad) {
  Team team(ranks);
  std::vector<Outcome> outcomes(static_cast<std::size_t>(ranks));
  harness::run(team, [&](Comm& comm) {
    Outcome& outcome = outcomes[static_cast<std::size_t>(comm.rank())];
    try {
      bad(comm);
    } catch (const Error& e) {
      outcome.threw = true;
      outcome.code = e.code();
      outcome.message = e.what();
    }
    int value = comm.rank() + 1;
    int sum = 0;
    comm.all_reduce(&value, &sum, 1, ReduceOp::sum);
    outcome.still_works = sum == comm.size() * (comm.size() + 1) / 2;
  });
  return outcomes;
}

void expect_invalid(int ranks, const std::function<void(Comm&)>& bad, const std::string& call,
                    const std::string& value) {
  const std::vector<Outcome> outcomes = each_rank(ranks, bad);
  for (int r = 0; r < ranks; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.message);
    CHECK(o.threw);
    CHECK(o.code == ErrorCode::invalid_argument);
    CHECK(o.message.find("chorus::" + call + " on rank " + std::to_string(r)) != std::string::npos);
    CHECK(o.message.find(value) != std::string::npos);
    CHECK(o.still_works);
  }
}

}  // namespace

TEST_CASE("Team of fewer than one rank is refused", "[validation]") {
  CHECK_THROWS_AS(Team(0), Error);
  CHECK_THROWS_AS(Team(-3), Error);
  try {
    Team team(0);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()).find("0") != std::string::npos);
  }
}

TEST_CASE("null buffers with a non-zero count are refused", "[validation]") {
  std::vector<float> buffer(8);
  expect_invalid(3, [&](Comm& c) { c.all_reduce<float>(nullptr, buffer.data(), 8, ReduceOp::sum); }, "all_reduce",
                 "send buffer is null with count 8");
  expect_invalid(3, [&](Comm& c) { c.all_reduce<float>(buffer.data(), nullptr, 8, ReduceOp::sum); }, "all_reduce",
                 "recv buffer is null");
  expect_invalid(2, [&](Comm& c) { c.all_gather<float>(nullptr, buffer.data(), 4); }, "all_gather", "send");
  expect_invalid(2, [&](Comm& c) { c.all_gather<float>(buffer.data(), nullptr, 4); }, "all_gather", "recv");
  expect_invalid(2, [&](Comm& c) { c.reduce_scatter<float>(nullptr, buffer.data(), 4, ReduceOp::max); },
                 "reduce_scatter", "send");
  expect_invalid(2, [&](Comm& c) { c.all_to_all<float>(buffer.data(), nullptr, 4); }, "all_to_all", "recv");
  expect_invalid(2, [&](Comm& c) { c.broadcast<float>(buffer.data(), nullptr, 8, 0); }, "broadcast", "recv");
  expect_invalid(2, [&](Comm& c) { c.reduce<float>(nullptr, buffer.data(), 8, ReduceOp::sum, 1); }, "reduce", "send");
  // The root's send (broadcast) and recv (reduce) must exist; the others' may be null.
  const auto root_only = each_rank(3, [&](Comm& c) {
    std::vector<float> mine(8);
    if (c.rank() == 1) c.broadcast<float>(nullptr, mine.data(), 8, 1);
  });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << root_only[static_cast<std::size_t>(r)].message);
    CHECK(root_only[static_cast<std::size_t>(r)].threw == (r == 1));
  }
}

TEST_CASE("null buffers are fine with a zero count, and where a rank does not use them", "[validation]") {
  const auto outcomes = each_rank(4, [](Comm& c) {
    c.all_reduce<double>(nullptr, nullptr, 0, ReduceOp::sum);
    c.all_gather<double>(nullptr, nullptr, 0);
    c.reduce_scatter<double>(nullptr, nullptr, 0, ReduceOp::avg);
    c.all_to_all<double>(nullptr, nullptr, 0);
    c.broadcast<double>(nullptr, nullptr, 0, 2);
    c.reduce<double>(nullptr, nullptr, 0, ReduceOp::min, 3);
    std::vector<double> data(5, 1.0);
    c.broadcast<double>(c.rank() == 0 ? data.data() : nullptr, data.data(), 5, 0);
    c.reduce<double>(data.data(), c.rank() == 2 ? data.data() : nullptr, 5, ReduceOp::sum, 2);
    // A literal nullptr needs no explicit type where the call allows it.
    if (c.rank() != 1) c.broadcast(nullptr, data.data(), 0, 1);
    if (c.rank() == 1) c.broadcast(data.data(), data.data(), 0, 1);
    c.reduce(data.data(), c.rank() == 0 ? data.data() : nullptr, 5, ReduceOp::max, 0);
    if (c.rank() != 0) c.reduce(data.data(), nullptr, 5, ReduceOp::max, 0);
    if (c.rank() == 0) c.reduce(data.data(), data.data(), 5, ReduceOp::max, 0);
  });
  for (const Outcome& o : outcomes) {
    INFO(o.message);
    CHECK_FALSE(o.threw);
    CHECK(o.still_works);
  }
}

TEST_CASE("roots outside the communicator are refused", "[validation]") {
  std::vector<int> buffer(4);
  expect_invalid(3, [&](Comm& c) { c.broadcast(buffer.data(), buffer.data(), 4, 3); }, "broadcast", "root 3");
  expect_invalid(3, [&](Comm& c) { c.broadcast(buffer.data(), buffer.data(), 4, -1); }, "broadcast", "root -1");
  expect_invalid(2, [&](Comm& c) { c.reduce(buffer.data(), buffer.data(), 4, ReduceOp::sum, 7); }, "reduce", "root 7");
}

TEST_CASE("counts whose byte size overflows are refused", "[validation]") {
  std::vector<std::int64_t> buffer(4);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 4;
  expect_invalid(2, [&](Comm& c) { c.all_reduce(buffer.data(), buffer.data(), huge, ReduceOp::sum); }, "all_reduce",
                 std::to_string(huge));
  expect_invalid(3, [&](Comm& c) { c.all_gather(buffer.data(), buffer.data() + 1, huge / 2); }, "all_gather",
                 "overflows");
  expect_invalid(2, [&](Comm& c) { c.all_to_all(buffer.data(), buffer.data(), huge); }, "all_to_all", "overflows");
}

TEST_CASE("enum values out of range are refused", "[validation]") {
  std::vector<float> buffer(4);
  expect_invalid(2,
                 [&](Comm& c) {
                   c.all_reduce(buffer.data(), buffer.data(), 4, ReduceOp::sum, static_cast<Algorithm>(42));
                 },
                 "all_reduce", "algorithm 42");
  expect_invalid(2, [&](Comm& c) { c.all_reduce(buffer.data(), buffer.data(), 4, static_cast<ReduceOp>(-1)); },
                 "all_reduce", "reduce op -1");
  expect_invalid(2, [&](Comm& c) { c.reduce_scatter(buffer.data(), buffer.data(), 2, static_cast<ReduceOp>(9)); },
                 "reduce_scatter", "reduce op 9");
}

TEST_CASE("send and recv check their peer", "[validation]") {
  int value = 0;
  expect_invalid(3, [&](Comm& c) { c.send(&value, 1, 3); }, "send", "peer 3");
  expect_invalid(3, [&](Comm& c) { c.recv(&value, 1, -1); }, "recv", "peer -1");
  expect_invalid(3, [&](Comm& c) { c.send(&value, 1, c.rank()); }, "send", "is this rank itself");
  expect_invalid(2, [&](Comm& c) { c.recv<int>(nullptr, 1, 1 - c.rank()); }, "recv", "data buffer is null");
}

TEST_CASE("send and recv refuse a bad type and give the shared check's messages", "[validation]") {
  // runtime::check_point_to_point: the same words on every backend.
  const auto messages = [](int ranks, const std::function<void(Comm&)>& bad) {
    std::vector<std::string> got;
    for (const Outcome& o : each_rank(ranks, bad)) {
      CHECK(o.code == ErrorCode::invalid_argument);
      CHECK(o.still_works);
      got.push_back(o.message);
    }
    return got;
  };
  int value = 0;
  CHECK(messages(2, [&](Comm& c) { c.send(&value, 1, static_cast<chorus::DataType>(42), 1 - c.rank()); }) ==
        std::vector<std::string>{"chorus::send on rank 0: data type 42 is not a chorus::DataType",
                                 "chorus::send on rank 1: data type 42 is not a chorus::DataType"});
  CHECK(messages(2, [&](Comm& c) { c.recv(&value, 1, static_cast<chorus::DataType>(-3), 1 - c.rank()); }) ==
        std::vector<std::string>{"chorus::recv on rank 0: data type -3 is not a chorus::DataType",
                                 "chorus::recv on rank 1: data type -3 is not a chorus::DataType"});
  CHECK(messages(2, [&](Comm& c) { c.send(&value, 1, 2); }) ==
        std::vector<std::string>{"chorus::send on rank 0: peer 2 is not a rank of this 2-rank communicator",
                                 "chorus::send on rank 1: peer 2 is not a rank of this 2-rank communicator"});
  CHECK(messages(2, [&](Comm& c) { c.send<int>(nullptr, 4, 1 - c.rank()); }) ==
        std::vector<std::string>{"chorus::send on rank 0: data buffer is null with count 4",
                                 "chorus::send on rank 1: data buffer is null with count 4"});
}

TEST_CASE("buffers that overlap without being in place are refused", "[validation]") {
  std::vector<float> buffer(16);
  expect_invalid(2, [&](Comm& c) { c.all_reduce(buffer.data(), buffer.data() + 1, 4, ReduceOp::sum); }, "all_reduce",
                 "overlaps");
  // all_gather in place is send == recv + rank*count; rank 0's recv + 1 is not.
  expect_invalid(2, [&](Comm& c) { c.all_gather(buffer.data() + 1 + c.rank() * 3, buffer.data(), 3); }, "all_gather",
                 "overlaps");
}

TEST_CASE("a malformed CHORUS_TIMEOUT_MS is an error, not a silent default", "[validation]") {
  harness::ScopedEnv env("CHORUS_TIMEOUT_MS", "soon");
  std::vector<int> buffer(2);
  Team team(2);
  std::vector<int> codes(2, -1);
  harness::run(team, [&](Comm& c) {
    try {
      c.all_reduce(buffer.data(), buffer.data(), 0, ReduceOp::sum);
    } catch (const Error& e) {
      codes[static_cast<std::size_t>(c.rank())] = static_cast<int>(e.code());
    }
  });
  CHECK(codes[0] == static_cast<int>(ErrorCode::invalid_argument));
  CHECK(codes[1] == static_cast<int>(ErrorCode::invalid_argument));
}

TEST_CASE("a malformed CHORUS_TIMEOUT_MS fails the call that reads it, naming the call and the rank", "[validation]") {
  harness::ScopedEnv timeout("CHORUS_TIMEOUT_MS", "soon");
  Team team(2);
  std::vector<std::string> messages(2);
  std::vector<int> codes(2, -1);
  harness::run(team, [&](Comm& c) {
    float x = 1;
    try {
      c.all_reduce(&x, &x, 1, ReduceOp::sum);
    } catch (const Error& e) {
      messages[static_cast<std::size_t>(c.rank())] = e.what();
      codes[static_cast<std::size_t>(c.rank())] = static_cast<int>(e.code());
    }
  });
  for (int r = 0; r < 2; ++r) {
    INFO(messages[static_cast<std::size_t>(r)]);
    CHECK(codes[static_cast<std::size_t>(r)] == static_cast<int>(ErrorCode::invalid_argument));
    CHECK_THAT(messages[static_cast<std::size_t>(r)],
               Catch::StartsWith("chorus::all_reduce on rank " + std::to_string(r) + ": chorus: CHORUS_TIMEOUT_MS must be"));
  }
}

}  // namespace test_validation
