// The host backend passes the checks written once for every communicator (tests/support).
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "support/generic_checks.hpp"

#include <string>
#include <vector>

namespace test_generic {

TEST_CASE("host::Comm passes the generic communicator checks", "[host][generic]") {
  for (int ranks : {1, 2, 3, 4, 5, 8}) {
    chorus::host::Team team(ranks);
    std::vector<std::vector<std::string>> failures(static_cast<std::size_t>(ranks));
    harness::run(team, [&](chorus::host::Comm& comm) {
      failures[static_cast<std::size_t>(comm.rank())] = generic::generic_checks(comm);
    });
    for (int r = 0; r < ranks; ++r) {
      INFO(ranks << " ranks, rank " << r);
      CHECK(failures[static_cast<std::size_t>(r)] == std::vector<std::string>{});
    }
  }
}

}  // namespace test_generic
