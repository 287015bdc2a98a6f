// run_pipeline over real communicators: GPipe, 1F1B, interleaved and ZB-H1 training steps give the
// loss and gradients of unpipelined gradient accumulation, with exactly the schedule's transfers,
// on host threads (synchronous sends: an ordering mistake deadlocks) and on the mailbox fake
// (tests/support/model_parallel_checks.hpp, which also runs under MPI).
#include <catch2/catch.hpp>

#include "host/harness.hpp"
#include "support/mailbox_comm.hpp"
#include "support/model_parallel_checks.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace {

using Failures = std::vector<std::vector<std::string>>;

template <class Check>
void on_every_communicator(const char* name, Check check) {
  for (int ranks : {1, 2, 3, 4, 5}) {
    Failures host(static_cast<std::size_t>(ranks)), fake(static_cast<std::size_t>(ranks));
    chorus::host::Team team(ranks);
    harness::run(team, [&](chorus::host::Comm& comm) { host[static_cast<std::size_t>(comm.rank())] = check(comm); },
                 std::chrono::seconds(60));
    mailbox::run(ranks, [&](mailbox::Comm& comm) { fake[static_cast<std::size_t>(comm.rank())] = check(comm); });
    for (int r = 0; r < ranks; ++r) {
      INFO(name << ", " << ranks << " ranks, rank " << r);
      CHECK(host[static_cast<std::size_t>(r)] == std::vector<std::string>{});
      CHECK(fake[static_cast<std::size_t>(r)] == std::vector<std::string>{});
    }
  }
}

}  // namespace

TEST_CASE("pipelined loss and gradients equal unpipelined gradient accumulation", "[pipeline]") {
  on_every_communicator("pipeline", [](auto& comm) { return mp_checks::pipeline_checks(comm); });
}

TEST_CASE("run_pipeline refuses impossible requests before any transfer", "[pipeline]") {
  on_every_communicator("pipeline errors", [](auto& comm) { return mp_checks::pipeline_error_checks(comm); });
}

TEST_CASE("a pipeline over a split communicator: two pipelines side by side", "[pipeline]") {
  // 4 ranks as 2 data-parallel replicas of a 2-stage pipeline: each replica runs on its own
  // sub-communicator, as a Mesh's pp dimension would give it.
  const int ranks = 4;
  Failures failures(ranks);
  chorus::host::Team team(ranks);
  harness::run(team, [&](chorus::host::Comm& comm) {
    chorus::host::Comm pipeline = comm.split(comm.rank() % 2, comm.rank());
    failures[static_cast<std::size_t>(comm.rank())] = mp_checks::pipeline_checks(pipeline);
  }, std::chrono::seconds(60));
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r);
    CHECK(failures[static_cast<std::size_t>(r)] == std::vector<std::string>{});
  }
}
