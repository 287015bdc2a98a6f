// The per-rank view of a team (cuda/team_comm.hpp) over the CPU twin: the communicator contract's generic
// checks with one thread per rank, the same calls from one thread inside group(), ranks that disagree or
// never call (every rank gets chorus::Error naming the rank and the value, bounded), split, send/recv,
// and the parallel layer's data-parallel check on top.
#include <catch2/catch.hpp>

#include <chorus/cuda/twin/twin_team.hpp>

#include "support/generic_checks.hpp"
#include "support/sanitizers.hpp"
#include "support/scoped_env.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace test_twin_comm {

using chorus::Algorithm;
using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::RankComm;
using chorus::cuda::twin::Team;

static_assert(chorus::check_communicator<RankComm>(), "the twin's per-rank view satisfies the contract");

namespace {

// 1 block of 2 lanes: ranks x 2 threads per launch, sane under the sanitizers.
Options small() {
  Options options;
  options.blocks = 1;
  options.threads = 2;
  return options;
}

// What one rank's thread saw: its failures as text, or the chorus::Error it threw.
struct Outcome {
  std::vector<std::string> failures;
  bool threw = false;
  ErrorCode code = ErrorCode::internal;
  std::string what;
};

// One thread per rank runs body(comm) on team.comm(rank); asserts stay on the main thread.
std::vector<Outcome> on_every_rank(Team& team, const std::function<std::vector<std::string>(RankComm&)>& body) {
  std::vector<Outcome> outcomes(static_cast<std::size_t>(team.size()));
  std::vector<std::thread> threads;
  for (int r = 0; r < team.size(); ++r) {
    threads.emplace_back([&, r] {
      Outcome& mine = outcomes[static_cast<std::size_t>(r)];
      try {
        RankComm comm = team.comm(r);
        mine.failures = body(comm);
      } catch (const Error& e) {
        mine.threw = true;
        mine.code = e.code();
        mine.what = e.what();
      } catch (const std::exception& e) {
        mine.threw = true;
        mine.what = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return outcomes;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }


std::vector<float> filled(std::size_t count, float value) { return std::vector<float>(count, value); }

}  // namespace

TEST_CASE("twin views pass the generic communicator checks, one thread per rank") {
  for (int ranks : {1, 2, 3, 4}) {
    Team team(ranks, small());
    const std::vector<Outcome> outcomes = on_every_rank(team, [](RankComm& comm) { return generic::generic_checks(comm); });
    for (int r = 0; r < ranks; ++r) {
      INFO(ranks << " ranks, rank " << r << ": " << outcomes[static_cast<std::size_t>(r)].what);
      CHECK_FALSE(outcomes[static_cast<std::size_t>(r)].threw);
      CHECK(outcomes[static_cast<std::size_t>(r)].failures == std::vector<std::string>{});
    }
  }
}

TEST_CASE("one thread drives every rank inside group(): calls run in order at its end") {
  const int ranks = 3;
  Team team(ranks, small());
  const std::size_t count = 37;
  std::vector<std::vector<float>> x, y;
  for (int r = 0; r < ranks; ++r) {
    x.push_back(filled(count, static_cast<float>(r + 1)));
    y.push_back(filled(count * ranks, -1.0f));
  }
  // Two calls per rank, the second reading the first's result: only in-order settling gets 6 * 3.
  team.group([&] {
    for (int r = 0; r < ranks; ++r) team.comm(r).all_reduce(x[r].data(), x[r].data(), count, ReduceOp::sum);
    for (int r = 0; r < ranks; ++r) team.comm(r).all_gather(x[r].data(), y[r].data(), count, Algorithm::ring);
  });
  team.synchronize();  // stream-ordered: the group enqueued the calls
  for (int r = 0; r < ranks; ++r) {
    CHECK(x[static_cast<std::size_t>(r)] == filled(count, 6.0f));
    CHECK(y[static_cast<std::size_t>(r)] == filled(count * ranks, 6.0f));
  }
  // The RAII form, and a barrier and the type-erased form through it.
  {
    chorus::cuda::Group group;
    for (int r = 0; r < ranks; ++r) team.comm(r).barrier();
    for (int r = 0; r < ranks; ++r) {
      team.comm(r).all_reduce(static_cast<const void*>(x[r].data()), static_cast<void*>(x[r].data()), count,
                              chorus::DataType::float32, ReduceOp::max, Algorithm::two_shot);
    }
    group.end();
  }
  team.comm(0).wait();  // a view's wait() is the team's
  for (int r = 0; r < ranks; ++r) CHECK(x[static_cast<std::size_t>(r)] == filled(count, 6.0f));
}

TEST_CASE("one thread calling rank after rank outside a group times out, saying to use group()") {
  const support::ScopedEnv timeout("CHORUS_TIMEOUT_MS", "200");
  Team team(2, small());
  std::vector<float> a = filled(4, 1.0f), b = filled(4, 2.0f);
  try {
    team.comm(0).all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
    FAIL("rank 0's call returned without rank 1");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK(contains(e.what(), "rank(s) 1 never made call 0"));
    CHECK(contains(e.what(), "group()"));
  }
  // Rank 1's late part of the failed call fails at once with the same reason.
  try {
    team.comm(1).all_reduce(b.data(), b.data(), 4, ReduceOp::sum);
    FAIL("rank 1 joined a call that had already failed");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK(contains(e.what(), "on rank 1"));
  }
  CHECK(b == filled(4, 2.0f));  // nothing ran
  // The team still works for the next call.
  team.group([&] {
    team.comm(0).all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
    team.comm(1).all_reduce(b.data(), b.data(), 4, ReduceOp::sum);
  });
  team.synchronize();
  CHECK(a == filled(4, 3.0f));
  CHECK(b == filled(4, 3.0f));
}

TEST_CASE("ranks that disagree all get chorus::Error naming the rank and the value, and nothing runs") {
  struct Case {
    const char* what;
    std::function<void(RankComm&, std::vector<float>&)> call;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"count", [](RankComm& c, std::vector<float>& v) { c.all_reduce(v.data(), v.data(), c.rank() == 2 ? 5 : 6, ReduceOp::sum); },
       "count 6 on rank 0, 5 on rank 2"},
      {"op", [](RankComm& c, std::vector<float>& v) { c.all_reduce(v.data(), v.data(), 6, c.rank() == 1 ? ReduceOp::max : ReduceOp::sum); },
       "op sum on rank 0, max on rank 1"},
      {"root", [](RankComm& c, std::vector<float>& v) { c.broadcast(v.data(), v.data(), 6, c.rank() == 3 ? 1 : 0); },
       "root 0 on rank 0, 1 on rank 3"},
      {"collective", [](RankComm& c, std::vector<float>& v) {
         if (c.rank() == 1) c.reduce(v.data(), v.data(), 6, ReduceOp::sum, 0); else c.all_reduce(v.data(), v.data(), 6, ReduceOp::sum);
       }, "collective all_reduce on rank 0, reduce on rank 1"},
      {"algorithm", [](RankComm& c, std::vector<float>& v) {
         c.all_reduce(v.data(), v.data(), 6, ReduceOp::sum, c.rank() == 2 ? Algorithm::ring : Algorithm::one_shot);
       }, "algorithm one_shot on rank 0, ring on rank 2"},
  };
  for (const Case& c : cases) {
    Team team(4, small());
    std::vector<std::vector<float>> data(4, filled(6, 1.0f));
    const std::vector<Outcome> outcomes = on_every_rank(team, [&](RankComm& comm) {
      c.call(comm, data[static_cast<std::size_t>(comm.rank())]);
      return std::vector<std::string>{};
    });
    for (int r = 0; r < 4; ++r) {
      const Outcome& o = outcomes[static_cast<std::size_t>(r)];
      INFO(c.what << ", rank " << r << ": " << o.what);
      CHECK(o.threw);
      CHECK(o.code == ErrorCode::mismatch);
      CHECK(contains(o.what, chorus::detail::concat("on rank ", r, ": ranks disagree at call 0")));
      CHECK(contains(o.what, c.expected));
      CHECK(data[static_cast<std::size_t>(r)] == filled(6, 1.0f));
    }
  }
}

TEST_CASE("a rank that never calls: the others time out, bounded, naming it") {
  const support::ScopedEnv timeout("CHORUS_TIMEOUT_MS", "300");
  Team team(3, small());
  std::vector<std::vector<float>> data(3, filled(8, 1.0f));
  const std::vector<Outcome> outcomes = on_every_rank(team, [&](RankComm& comm) {
    if (comm.rank() != 1) comm.all_reduce(data[static_cast<std::size_t>(comm.rank())].data(), data[static_cast<std::size_t>(comm.rank())].data(), 8, ReduceOp::sum);
    return std::vector<std::string>{};
  });
  for (int r : {0, 2}) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.what);
    CHECK(o.threw);
    CHECK(o.code == ErrorCode::timeout);
    CHECK(contains(o.what, chorus::detail::concat("all_reduce on rank ", r)));
    CHECK(contains(o.what, "rank(s) 1 never made call 0"));
  }
  CHECK_FALSE(outcomes[1].threw);
}

TEST_CASE("a rank whose part fails its own checks releases the others at once, and the ranks stay in step") {
  const support::ScopedEnv timeout("CHORUS_TIMEOUT_MS", "60000");  // the others must not wait for this bound
  Team team(3, small());
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = on_every_rank(team, [](RankComm& comm) {
    std::vector<std::string> seen;
    std::vector<int> x(4, comm.rank() + 1);
    try {
      comm.all_reduce(x.data(), comm.rank() == 1 ? nullptr : x.data(), 4, ReduceOp::sum);  // rank 1: null recv
      seen.push_back("the first call returned");
    } catch (const Error& e) {
      const bool expected = comm.rank() == 1 ? e.code() == ErrorCode::invalid_argument
                                             : e.code() == ErrorCode::peer_failed && contains(e.what(), "rank 1's part of call 0");
      if (!expected) seen.push_back(std::string("unexpected: ") + e.what());
    }
    std::vector<int> y(4, comm.rank() + 1);
    comm.all_reduce(y.data(), y.data(), 4, ReduceOp::sum);  // the next call is the same call on every rank
    comm.wait();
    if (y != std::vector<int>(4, 6)) seen.push_back("the second call summed the wrong parts");
    return seen;
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].what);
    CHECK_FALSE(outcomes[r].threw);
    for (const std::string& failure : outcomes[r].failures) CHECK(failure == "");
  }
}

TEST_CASE("a moved team's views run on the team it moved to") {
  Team first(3, small());
  first.comm(0);  // makes the per-rank state, which points at `first`
  Team team = std::move(first);
  const auto outcomes = on_every_rank(team, [](RankComm& comm) {
    std::vector<int> x(5, comm.rank() + 1);
    comm.all_reduce(x.data(), x.data(), x.size(), ReduceOp::sum);
    comm.wait();
    return x == std::vector<int>(5, 6) ? std::vector<std::string>{} : std::vector<std::string>{"wrong sum"};
  });
  for (const Outcome& outcome : outcomes) {
    INFO(outcome.what);
    CHECK_FALSE(outcome.threw);
    CHECK(outcome.failures.empty());
  }
  // The moved-from team refuses calls instead of launching on nothing.
  std::vector<float> x(4);
  CHECK_THROWS_WITH(first.all_reduce<float>({x.data()}, {x.data()}, 4, ReduceOp::sum), Catch::Contains("called on a moved-from team"));
  CHECK_NOTHROW(first.synchronize());  // nothing to wait for
}

TEST_CASE("bad arguments fail the calling rank at once, before the rendezvous") {
  Team team(2, small());
  std::vector<float> x(4);
  CHECK_THROWS_AS(team.comm(2), Error);
  CHECK_THROWS_WITH(team.comm(0).all_reduce(x.data(), static_cast<float*>(nullptr), 4, ReduceOp::sum),
                    Catch::Contains("all_reduce on rank 0") && Catch::Contains("recv buffer is null with count 4"));
  CHECK_THROWS_WITH(team.comm(1).all_reduce(x.data(), x.data(), 4, ReduceOp::sum, Algorithm::halving_doubling),
                    Catch::Contains("on rank 1") && Catch::Contains("halving_doubling"));
  CHECK_THROWS_WITH(team.comm(1).broadcast(x.data(), x.data(), 4, 2), Catch::Contains("root 2"));
  CHECK_THROWS_WITH(team.comm(0).send(x.data(), 4, 0), Catch::Contains("peer 0"));
}

TEST_CASE("split: two colours, keys reorder, the sub-communicators work and split again") {
  Team team(4, small());
  const std::vector<Outcome> outcomes = on_every_rank(team, [](RankComm& comm) {
    std::vector<std::string> failures;
    const int r = comm.rank();
    // Colours {0, 2} and {1, 3}, reversed by key.
    RankComm half = comm.split(r % 2, -r);
    if (half.size() != 2 || half.rank() != 1 - r / 2) {
      failures.push_back(chorus::detail::concat("rank ", r, " got rank ", half.rank(), " of ", half.size()));
    }
    std::vector<std::int32_t> v = {r, 1};
    half.all_reduce(v.data(), v.data(), 2, ReduceOp::sum);
    half.wait();
    const std::vector<std::int32_t> want = {r % 2 == 0 ? 2 : 4, 2};
    if (v != want) failures.push_back(chorus::detail::concat("rank ", r, ": sum over its half ", v[0], ", ", v[1]));
    // Root 0 of the half is its key-first member: the higher parent rank.
    std::vector<std::int32_t> root_rank = {r};
    half.broadcast(root_rank.data(), root_rank.data(), 1, 0);
    half.wait();
    if (root_rank[0] != (r % 2 == 0 ? 2 : 3)) failures.push_back(chorus::detail::concat("rank ", r, ": broadcast from ", root_rank[0]));
    // Nested: each half splits into singletons; colour < 0 gives a null view.
    RankComm alone = half.split(half.rank(), 0);
    if (alone.size() != 1 || alone.rank() != 0) failures.push_back(chorus::detail::concat("rank ", r, ": nested split size ", alone.size()));
    alone.barrier();
    RankComm none = comm.split(r == 3 ? -1 : 0, 0);
    if (r == 3) {
      if (none || none.size() != 0 || none.rank() != -1) failures.push_back("colour -1 gave a communicator");
      try {
        none.barrier();
        failures.push_back("a null view's barrier returned");
      } catch (const Error& e) {
        if (e.code() != ErrorCode::invalid_argument) failures.push_back("null view: wrong error");
      }
    } else {
      std::vector<float> one = {1.0f};
      none.all_reduce(one.data(), one.data(), 1, ReduceOp::sum);
      none.wait();
      if (none.size() != 3 || one[0] != 3.0f) failures.push_back(chorus::detail::concat("rank ", r, ": three-rank split gave ", one[0]));
    }
    return failures;
  });
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << outcomes[static_cast<std::size_t>(r)].what);
    CHECK_FALSE(outcomes[static_cast<std::size_t>(r)].threw);
    CHECK(outcomes[static_cast<std::size_t>(r)].failures == std::vector<std::string>{});
  }
}

TEST_CASE("send/recv: a pipeline chain, one thread per rank") {
  const int ranks = 4;
  Team team(ranks, small());
  const std::size_t count = 33;
  std::vector<std::vector<double>> got(ranks, std::vector<double>(count, -1.0));
  const std::vector<Outcome> outcomes = on_every_rank(team, [&](RankComm& comm) {
    const int r = comm.rank();
    std::vector<double>& mine = got[static_cast<std::size_t>(r)];
    if (r == 0) {
      for (std::size_t i = 0; i < count; ++i) mine[i] = static_cast<double>(i);
    } else {
      comm.recv(mine.data(), count, r - 1);
      comm.wait();  // the receive is stream-ordered: read it after the wait
      for (double& v : mine) v += 1.0;  // each stage adds one
    }
    if (r + 1 < comm.size()) comm.send(mine.data(), count, r + 1);
    comm.wait();
    return std::vector<std::string>{};
  });
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r << ": " << outcomes[static_cast<std::size_t>(r)].what);
    CHECK_FALSE(outcomes[static_cast<std::size_t>(r)].threw);
    for (std::size_t i = 0; i < count; ++i) CHECK(got[static_cast<std::size_t>(r)][i] == static_cast<double>(i + static_cast<std::size_t>(r)));
  }
}

TEST_CASE("send/recv inside group(): an exchange, and several messages on one pair matched in call order") {
  Team team(2, small());
  std::vector<std::int32_t> a = {1, 2, 3}, b = {4, 5, 6}, at0(3, 0), at1(3, 0);
  // Both ranks send first: synchronous calls would time out; in a group they run as one transfer.
  team.group([&] {
    team.comm(0).send(a.data(), 3, 1);
    team.comm(0).recv(at0.data(), 3, 1);
    team.comm(1).send(b.data(), 3, 0);
    team.comm(1).recv(at1.data(), 3, 0);
  });
  team.synchronize();
  CHECK(at0 == b);
  CHECK(at1 == a);
  std::vector<float> first = {1.5f}, second = {2.5f}, x = {0.0f}, y = {0.0f};
  team.group([&] {
    team.comm(0).send(first.data(), 1, 1);
    team.comm(0).send(second.data(), 1, 1);
    team.comm(1).recv(x.data(), 1, 0);
    team.comm(1).recv(y.data(), 1, 0);
  });
  team.synchronize();
  CHECK(x[0] == 1.5f);
  CHECK(y[0] == 2.5f);
}

TEST_CASE("send/recv that disagree on the count fail both sides; an unmatched send times out naming the peer") {
  Team team(2, small());
  std::vector<float> data(4, 1.0f), into(4, 0.0f);
  const std::vector<Outcome> outcomes = on_every_rank(team, [&](RankComm& comm) {
    if (comm.rank() == 0) comm.send(data.data(), 4, 1); else comm.recv(into.data(), 3, 0);
    return std::vector<std::string>{};
  });
  for (int r = 0; r < 2; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.what);
    CHECK(o.code == ErrorCode::mismatch);
    CHECK(contains(o.what, chorus::detail::concat(r == 0 ? "send" : "recv", " on rank ", r)));
    CHECK(contains(o.what, "rank 0 sends 4 float32 to rank 1, which receives 3 float32 from rank 0"));
  }
  CHECK(into == filled(4, 0.0f));
  const support::ScopedEnv timeout("CHORUS_TIMEOUT_MS", "200");
  try {
    team.comm(1).send(data.data(), 4, 0);
    FAIL("an unmatched send returned");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK(contains(e.what(), "send on rank 1: rank 0 never called recv from rank 1"));
  }
}

}  // namespace test_twin_comm
