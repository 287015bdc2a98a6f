// The step interpreter over a second transport: the mailbox communicator (copying message queues)
// passes the same generic checks as the host backend, for awkward rank counts.
#include <catch2/catch.hpp>

#include "support/generic_checks.hpp"
#include "support/mailbox_comm.hpp"

#include <string>
#include <vector>

namespace test_mailbox_comm {

TEST_CASE("the mailbox communicator passes the generic communicator checks", "[runtime][generic]") {
  for (int ranks : {1, 2, 3, 4, 5, 8}) {
    std::vector<std::vector<std::string>> failures(static_cast<std::size_t>(ranks));
    mailbox::run(ranks, [&](mailbox::Comm& comm) {
      failures[static_cast<std::size_t>(comm.rank())] = generic::generic_checks(comm);
    });
    for (int r = 0; r < ranks; ++r) {
      INFO(ranks << " ranks, rank " << r);
      CHECK(failures[static_cast<std::size_t>(r)] == std::vector<std::string>{});
    }
  }
}

TEST_CASE("the mailbox communicator runs every algorithm of all_reduce through the interpreter", "[runtime]") {
  const int ranks = 5;
  const std::size_t count = 1031;
  for (chorus::Algorithm algorithm : {chorus::Algorithm::ring, chorus::Algorithm::tree,
                                      chorus::Algorithm::halving_doubling, chorus::Algorithm::one_shot,
                                      chorus::Algorithm::two_shot}) {
    std::vector<std::vector<double>> got(ranks);
    mailbox::run(ranks, [&](mailbox::Comm& comm) {
      std::vector<double> data = generic::values<double>(comm.rank(), count);
      comm.all_reduce(data.data(), data.data(), count, chorus::ReduceOp::sum, algorithm);
      got[static_cast<std::size_t>(comm.rank())] = data;
    });
    for (int r = 0; r < ranks; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        INFO(chorus::to_string(algorithm) << " rank " << r << " element " << i);
        REQUIRE(got[static_cast<std::size_t>(r)][i] == generic::sum_over_ranks<double>(ranks, i));
      }
    }
  }
}

}  // namespace test_mailbox_comm
