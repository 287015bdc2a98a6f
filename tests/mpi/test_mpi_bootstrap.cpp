// Bootstrap under a real launcher: launch_info() agrees with MPI, and handles travel over mpi::Comm.
#include <catch2/catch.hpp>

#include <chorus/bootstrap.hpp>
#include <chorus/mpi.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "mpi_harness.hpp"

namespace {
struct FakeUniqueId {  // ncclUniqueId's shape: 128 opaque bytes
  char internal[128];
};
}  // namespace

TEST_CASE("launch_info reads mpirun's rank, size and local rank", "[mpi][bootstrap]") {
  const chorus::bootstrap::LaunchInfo info = chorus::bootstrap::launch_info();
  CHECK(info.launcher == "openmpi");
  CHECK(info.rank == mpi_harness::world_rank());
  CHECK(info.size == mpi_harness::world_size());
  CHECK(info.local_size == mpi_harness::world_size());  // one node
  CHECK(info.local_rank == info.rank);
  CHECK(chorus::bootstrap::local_device(info.local_size, info) == info.local_rank);
}

TEST_CASE("a unique id and per-rank handles travel over mpi::Comm", "[mpi][bootstrap]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  FakeUniqueId id{};
  if (comm.rank() == 0) std::strcpy(id.internal, "nccl id from rank 0");
  chorus::bootstrap::broadcast_object(comm, id);
  CHECK(std::string(id.internal) == "nccl id from rank 0");
  FakeUniqueId mine{};
  mine.internal[0] = static_cast<char>('a' + comm.rank());
  const std::vector<FakeUniqueId> all = chorus::bootstrap::all_gather_object(comm, mine);
  REQUIRE(all.size() == static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) CHECK(all[static_cast<std::size_t>(r)].internal[0] == 'a' + r);
}
