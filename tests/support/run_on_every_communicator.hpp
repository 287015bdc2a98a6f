// Runs a check written once against the communicator contract on every rank of a host::Team and
// of a mailbox world, for several rank counts. Each rank's check returns the failures it saw as
// text; the main thread asserts that every list is empty (Catch2 is not thread-safe).
#pragma once

#include <catch2/catch.hpp>

#include <chorus/host.hpp>

#include "host/harness.hpp"
#include "mailbox_comm.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace support {

using RankFailures = std::vector<std::vector<std::string>>;

struct RankCounts {
  std::vector<int> host = {1, 2, 3, 4};
  std::vector<int> mailbox = {1, 2, 3, 4};
  std::chrono::seconds host_limit = std::chrono::seconds(300);  // a host run that takes longer is a hang
};

inline void expect_no_failures(const std::string& where, const RankFailures& failures) {
  for (std::size_t r = 0; r < failures.size(); ++r) {
    INFO(where << ", rank " << r);
    CHECK(failures[r] == std::vector<std::string>{});
  }
}

// check(comm) -> std::vector<std::string>, called on every rank's thread.
template <class Check>
void run_on_host(const std::string& name, const std::vector<int>& rank_counts, Check check,
                 std::chrono::seconds limit = std::chrono::seconds(300)) {
  for (int ranks : rank_counts) {
    chorus::host::Team team(ranks);
    RankFailures failures(static_cast<std::size_t>(ranks));
    harness::run(team, [&](chorus::host::Comm& comm) { failures[static_cast<std::size_t>(comm.rank())] = check(comm); },
                 limit);
    expect_no_failures(name + ", host, " + std::to_string(ranks) + " ranks", failures);
  }
}

template <class Check>
void run_on_mailbox(const std::string& name, const std::vector<int>& rank_counts, Check check) {
  for (int ranks : rank_counts) {
    RankFailures failures(static_cast<std::size_t>(ranks));
    mailbox::run(ranks, [&](mailbox::Comm& comm) { failures[static_cast<std::size_t>(comm.rank())] = check(comm); });
    expect_no_failures(name + ", mailbox, " + std::to_string(ranks) + " ranks", failures);
  }
}

template <class Check>
void run_on_every_communicator(const std::string& name, Check check, const RankCounts& counts = {}) {
  run_on_host(name, counts.host, check, counts.host_limit);
  run_on_mailbox(name, counts.mailbox, check);
}

}  // namespace support
