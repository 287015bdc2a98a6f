// A mismatched large call on mpi::Comm never lets a peer's message land past a buffer chorus
// posted, and the caller may free its buffers once the error is caught (issue 24 §3): one rank
// forces Algorithm::ring, the others Algorithm::tree, on a 300,001-element float all_reduce, so
// the two schedules' messages differ in size and peer. Before the fix, Open MPI's shared-memory
// single-copy path wrote the larger message past chorus's receive staging (AddressSanitizer:
// heap-buffer-overflow under MPI_Irecv). Run it under ASan (docs/mpi.md, "Tests") to see a
// regression; without ASan the corruption shows, if at all, as a crash at exit.
#include <catch2/catch.hpp>

#include <chorus/mpi.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mpi_harness.hpp"

using chorus::Algorithm;
using chorus::ErrorCode;
using chorus::ReduceOp;
using mpi_harness::attempt;
using mpi_harness::Outcome;

namespace {

// One mismatched call on a fresh communicator; the buffers are freed as soon as the error is caught.
Outcome mismatched_large_all_reduce(std::size_t count, Algorithm mine) {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  auto send = std::make_unique<std::vector<float>>(count, 1.0f);
  auto recv = std::make_unique<std::vector<float>>(count, 0.0f);
  const Outcome o = attempt([&] { comm.all_reduce(send->data(), recv->data(), count, ReduceOp::sum, mine); });
  send.reset();
  recv.reset();
  // Whatever MPI still had of the failed call must not touch the freed memory: reuse it at once.
  std::vector<std::vector<float>> reuse;
  for (int i = 0; i < 4; ++i) reuse.emplace_back(count, -2.0f);
  return o;
}

}  // namespace

TEST_CASE("a mismatched large call never writes past chorus's buffers; freeing after the error is safe",
          "[mpi][mismatch][buffers]") {
  const mpi_harness::Settle settle;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Outcome o = mismatched_large_all_reduce(300001, mpi_harness::world_rank() == 0 ? Algorithm::ring
                                                                                          : Algorithm::tree);
    INFO("repeat " << repeat << ", rank " << mpi_harness::world_rank() << ": " << o.message);
    CHECK(o.threw);
    CHECK(o.code == ErrorCode::mismatch);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Later calls, on a new communicator, still work and give the right sums.
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<float> data(300001, 1.0f);
  comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, Algorithm::ring);
  CHECK(data.front() == static_cast<float>(comm.size()));
  CHECK(data.back() == static_cast<float>(comm.size()));
}

TEST_CASE("a mismatched count on a large call: every rank fails and may free its buffers", "[mpi][mismatch][buffers]") {
  const mpi_harness::Settle settle;
  const std::size_t count = mpi_harness::world_rank() == 0 ? 300001 : 200001;
  const Outcome o = mismatched_large_all_reduce(count, Algorithm::ring);
  INFO("rank " << mpi_harness::world_rank() << ": " << o.message);
  CHECK(o.code == ErrorCode::mismatch);
}
