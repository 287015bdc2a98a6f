// The parallel layer across real processes: the same cross-rank checks the host-thread and
// message-queue runs use (tests/support/*_parallel_checks.hpp), each on a fresh mpi::Comm. The
// gradient reducer's communication thread calls MPI here, under MPI_THREAD_MULTIPLE.
#include <catch2/catch.hpp>

#include <chorus/mpi.hpp>

#include <string>
#include <vector>

#include "mpi_harness.hpp"
#include "support/data_parallel_checks.hpp"
#include "support/model_parallel_checks.hpp"

using mpi_harness::gather_strings;
using chorus::mpi::Comm;

#define CHORUS_MPI_CHECK(check)                                                                           \
  do {                                                                                                    \
    Comm comm(MPI_COMM_WORLD);                                                                            \
    INFO(#check);                                                                                         \
    CHECK(gather_strings(check(comm)) == std::vector<std::string>{});                                    \
  } while (false)

TEST_CASE("data parallelism over MPI", "[mpi][parallel]") {
  CHORUS_MPI_CHECK(dp_checks::check_dp_equals_large_batch);
  CHORUS_MPI_CHECK(dp_checks::check_bucket_launch_order);
  CHORUS_MPI_CHECK(dp_checks::check_no_sync);
  CHORUS_MPI_CHECK(dp_checks::check_compression);
  CHORUS_MPI_CHECK(dp_checks::check_reducer_errors);
  CHORUS_MPI_CHECK(dp_checks::check_comm_thread_error);
  CHORUS_MPI_CHECK(dp_checks::check_local_sgd);
  CHORUS_MPI_CHECK(dp_checks::check_sampler);
  CHORUS_MPI_CHECK(dp_checks::check_zero);
  CHORUS_MPI_CHECK(dp_checks::check_mesh_comms);
}

TEST_CASE("tensor and pipeline parallelism over MPI", "[mpi][parallel]") {
  CHORUS_MPI_CHECK(mp_checks::column_parallel_checks);
  CHORUS_MPI_CHECK(mp_checks::row_parallel_checks);
  CHORUS_MPI_CHECK(mp_checks::mlp_checks);
  CHORUS_MPI_CHECK(mp_checks::sequence_parallel_mlp_checks);
  CHORUS_MPI_CHECK(mp_checks::tensor_parallel_error_checks);
  CHORUS_MPI_CHECK(mp_checks::vocab_parallel_cross_entropy_checks);
  CHORUS_MPI_CHECK(mp_checks::pipeline_checks);
  CHORUS_MPI_CHECK(mp_checks::pipeline_error_checks);
}
