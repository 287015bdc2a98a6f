// split(color, key): MPI semantics. Members of a colour are ordered by (key, parent rank), get
// their own communicator that works alongside the parent and other colours; a negative colour
// gives a null Comm; sub-communicators split again.
#include <catch2/catch.hpp>

#include <string>

#include "harness.hpp"

namespace test_split {

namespace {

using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

struct Member {
  int rank = -2;
  int size = -2;
  std::int64_t sum = 0;       // all_reduce of parent ranks over the sub-communicator
  std::vector<int> order;  // parent ranks gathered in sub-rank order
};

}  // namespace

TEST_CASE("colours and keys order the members", "[split]") {
  const int ranks = 7;
  Team team(ranks);
  std::vector<Member> members(ranks);
  harness::run(team, [&](Comm& c) {
    const int r = c.rank();
    // Colour r % 3; keys reverse the order, with ties (r / 4) broken by parent rank.
    Comm sub = c.split(r % 3, -(r / 4));
    Member& m = members[static_cast<std::size_t>(r)];
    m.rank = sub.rank();
    m.size = sub.size();
    std::int64_t mine = r;
    sub.all_reduce(&mine, &m.sum, 1, ReduceOp::sum);
    m.order.resize(static_cast<std::size_t>(sub.size()));
    sub.all_gather(&r, m.order.data(), 1);
  });
  for (int r = 0; r < ranks; ++r) {
    std::vector<int> same;
    for (int q = r % 3; q < ranks; q += 3) same.push_back(q);
    // Sorted by key -(q / 4), then parent rank: the q >= 4 ones first.
    std::vector<int> expected;
    for (int q : same) if (q >= 4) expected.push_back(q);
    for (int q : same) if (q < 4) expected.push_back(q);
    const Member& m = members[static_cast<std::size_t>(r)];
    INFO("rank " << r);
    CHECK(m.size == static_cast<int>(same.size()));
    CHECK(m.order == expected);
    CHECK(expected[static_cast<std::size_t>(m.rank)] == r);
    std::int64_t sum = 0;
    for (int q : same) sum += q;
    CHECK(m.sum == sum);
  }
}

TEST_CASE("a negative colour gives a null communicator", "[split]") {
  Team team(4);
  std::vector<int> sizes(4, -1), ranks(4, -2), refused(4, 0), valid(4, -1);
  harness::run(team, [&](Comm& c) {
    const auto r = static_cast<std::size_t>(c.rank());
    Comm sub = c.split(c.rank() == 2 ? -1 : 0, 0);
    sizes[r] = sub.size();
    ranks[r] = sub.rank();
    valid[r] = static_cast<bool>(sub);
    if (!sub) {
      int x = 0;
      try {
        sub.all_reduce(&x, &x, 1, ReduceOp::sum);
      } catch (const Error& e) {
        refused[r] += e.code() == ErrorCode::invalid_argument;
      }
      try {
        sub.barrier();
      } catch (const Error& e) {
        refused[r] += e.code() == ErrorCode::invalid_argument;
      }
      try {
        sub.send(&x, 1, 0);
      } catch (const Error& e) {
        refused[r] += e.code() == ErrorCode::invalid_argument;
      }
    } else {
      sub.barrier();
    }
  });
  CHECK(sizes == std::vector<int>{3, 3, 0, 3});
  CHECK(ranks == std::vector<int>{0, 1, -1, 2});
  CHECK(valid == std::vector<int>{1, 1, 0, 1});
  CHECK(refused == std::vector<int>{0, 0, 3, 0});
  Comm null_comm;
  CHECK(null_comm.size() == 0);
  CHECK_THROWS_AS(null_comm.barrier(), Error);
}

TEST_CASE("sub-communicators split again and run collectives side by side", "[split]") {
  const int ranks = 8;
  Team team(ranks);
  std::vector<std::vector<float>> results(ranks);
  std::vector<int> quarter_sizes(ranks), quarter_ranks(ranks);
  std::vector<std::int64_t> parent_sums(ranks);
  harness::run(team, [&](Comm& c) {
    const int r = c.rank();
    Comm half = c.split(r / 4, r);          // {0..3}, {4..7}
    Comm quarter = half.split(half.rank() % 2, half.rank());  // {0,2},{1,3},{4,6},{5,7}
    quarter_sizes[static_cast<std::size_t>(r)] = quarter.size();
    quarter_ranks[static_cast<std::size_t>(r)] = quarter.rank();
    std::vector<float> data(1000, static_cast<float>(r));
    // Halves run different collectives at the same time.
    if (r < 4) {
      half.all_reduce(data.data(), data.data(), data.size(), ReduceOp::max);
    } else {
      half.broadcast(data.data(), data.data(), data.size(), 1);
    }
    quarter.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
    results[static_cast<std::size_t>(r)] = data;
    std::int64_t x = r;
    c.all_reduce(&x, &parent_sums[static_cast<std::size_t>(r)], 1, ReduceOp::sum);  // the parent still works
  });
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r);
    CHECK(quarter_sizes[static_cast<std::size_t>(r)] == 2);
    CHECK(quarter_ranks[static_cast<std::size_t>(r)] == (r % 4) / 2);
    // After the halves: 3 everywhere in {0..3}, 5 (rank 1 of the upper half) in {4..7}; the
    // quarter sums two of those.
    const float expected = r < 4 ? 6.0f : 10.0f;
    CHECK(results[static_cast<std::size_t>(r)].front() == expected);
    CHECK(results[static_cast<std::size_t>(r)].back() == expected);
    CHECK(parent_sums[static_cast<std::size_t>(r)] == 28);
  }
}

TEST_CASE("split into singletons and into one group", "[split]") {
  const int ranks = 5;
  Team team(ranks);
  std::vector<int> single(ranks), whole(ranks), whole_rank(ranks);
  harness::run(team, [&](Comm& c) {
    const auto r = static_cast<std::size_t>(c.rank());
    Comm alone = c.split(c.rank(), 0);
    int x = 3;
    alone.all_reduce(&x, &x, 1, ReduceOp::prod);
    alone.barrier();
    single[r] = alone.size() == 1 && alone.rank() == 0 && x == 3;
    Comm all = c.split(0, ranks - c.rank());  // reversed
    whole[r] = all.size();
    whole_rank[r] = all.rank();
    for (int i = 0; i < 3; ++i) Comm again = c.split(i, 0);  // repeated splits reuse the handoff slot
  });
  for (int r = 0; r < ranks; ++r) {
    CHECK(single[static_cast<std::size_t>(r)] == 1);
    CHECK(whole[static_cast<std::size_t>(r)] == ranks);
    CHECK(whole_rank[static_cast<std::size_t>(r)] == ranks - 1 - r);
  }
}

TEST_CASE("errors on a split communicator name the rank there and in the team", "[split]") {
  Team team(4);
  std::vector<std::string> messages(4);
  harness::run(team, [&](Comm& c) {
    Comm sub = c.split(c.rank() % 2, -c.rank());  // odds: team rank 3 is rank 0, team rank 1 is rank 1
    float x = 0;
    try {
      sub.broadcast(&x, &x, 1, 7);
    } catch (const Error& e) {
      messages[static_cast<std::size_t>(c.rank())] = e.what();
    }
  });
  CHECK(messages[3] == "chorus::broadcast on rank 0 (team rank 3): root 7 is not a rank of this 2-rank communicator");
  CHECK(messages[1] == "chorus::broadcast on rank 1 (team rank 1): root 7 is not a rank of this 2-rank communicator");
  CHECK(messages[0] == "chorus::broadcast on rank 1 (team rank 0): root 7 is not a rank of this 2-rank communicator");
}

TEST_CASE("a call on a null communicator names the call, not a rank -1", "[split]") {
  Comm null;
  int x = 0;
  CHECK_THROWS_WITH(null.all_reduce(&x, &x, 1, ReduceOp::sum),
                    "chorus::all_reduce: called on a null communicator (from split with a negative colour, or "
                    "default-constructed)");
}

}  // namespace test_split
