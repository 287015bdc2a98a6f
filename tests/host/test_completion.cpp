// host::Comm's side of the completion rule: its buffers are host memory and every call completes before
// it returns, so wait() has nothing to wait for; it is still a call, and refuses a null communicator
// (default-constructed, moved from, or from split with a negative colour) as every call does.
#include <catch2/catch.hpp>

#include <chorus/core/memory_space.hpp>

#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace test_completion {

using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::host::Comm;
using chorus::host::Team;

TEST_CASE("host::Comm is host memory and completes on return", "[completion]") {
  STATIC_REQUIRE(chorus::memory_space_v<Comm> == chorus::MemorySpace::host);
  STATIC_REQUIRE(chorus::completes_on_return_v<Comm>);
}

TEST_CASE("wait() returns at once on every rank, and the result was already there", "[completion]") {
  Team team(3);
  std::vector<int> before(3, -1), after(3, -1);
  harness::run(team, [&](Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    int x = comm.rank() + 1;
    comm.all_reduce(&x, &x, 1, ReduceOp::sum);
    before[r] = x;  // readable when the call returns
    comm.wait();
    comm.wait();    // any number of times, on any rank alone: it is not collective
    after[r] = x;
    comm.barrier();  // the ranks are still in step: wait() took no part in the call sequence
  });
  CHECK(before == std::vector<int>{6, 6, 6});
  CHECK(after == before);
}

TEST_CASE("wait() refuses a null communicator like every call", "[completion]") {
  const std::string refused = "chorus::wait: called on a null communicator (from split with a negative colour, or "
                              "default-constructed)";
  Comm null;
  CHECK_THROWS_WITH(null.wait(), refused);

  Team team(2);
  std::vector<std::string> messages(4);
  harness::run(team, [&](Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    Comm none = comm.split(comm.rank() == 0 ? -1 : 0, 0);
    try {
      none.wait();
      messages[r] = "no error";
    } catch (const chorus::Error& e) {
      messages[r] = comm.rank() == 0 && e.code() == ErrorCode::invalid_argument ? e.what() : "wrong rank or code";
    }
    Comm moved = std::move(comm);
    try {
      comm.wait();  // NOLINT(bugprone-use-after-move): what is tested
    } catch (const chorus::Error& e) {
      messages[2 + r] = e.what();
    }
    moved.wait();
  });
  CHECK(messages == std::vector<std::string>{refused, "no error", refused, refused});
}

}  // namespace test_completion
