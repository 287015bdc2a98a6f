// run_pipeline over real communicators: GPipe, 1F1B, interleaved and ZB-H1 training steps give the
// loss and gradients of unpipelined gradient accumulation, with exactly the schedule's transfers,
// on host threads (synchronous sends: an ordering mistake deadlocks) and on the mailbox fake
// (tests/support/model_parallel_checks.hpp, which also runs under MPI).
#include <catch2/catch.hpp>

#include "support/model_parallel_checks.hpp"
#include "support/run_on_every_communicator.hpp"

#include <chrono>

namespace test_pipeline_executor {

namespace {

// 1 to 5 ranks of host threads and of the mailbox fake; a host run over a minute is a hang.
const support::RankCounts kRanks{{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}, std::chrono::seconds(60)};

}  // namespace

TEST_CASE("pipelined loss and gradients equal unpipelined gradient accumulation", "[pipeline]") {
  support::run_on_every_communicator("pipeline", [](auto& comm) { return mp_checks::pipeline_checks(comm); }, kRanks);
}

TEST_CASE("run_pipeline refuses impossible requests before any transfer", "[pipeline]") {
  support::run_on_every_communicator("pipeline errors",
                                     [](auto& comm) { return mp_checks::pipeline_error_checks(comm); }, kRanks);
}

TEST_CASE("a pipeline over a split communicator: two pipelines side by side", "[pipeline]") {
  // 4 ranks as 2 data-parallel replicas of a 2-stage pipeline: each replica runs on its own
  // sub-communicator, as a Mesh's pp dimension would give it.
  support::run_on_host("two pipelines", {4}, [](chorus::host::Comm& comm) {
    chorus::host::Comm pipeline = comm.split(comm.rank() % 2, comm.rank());
    return mp_checks::pipeline_checks(pipeline);
  }, std::chrono::seconds(60));
}

}  // namespace test_pipeline_executor
