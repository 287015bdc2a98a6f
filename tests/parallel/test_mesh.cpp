// Mesh: the rank grid's arithmetic (Megatron's 16-rank listing, PyTorch's DeviceMesh example) and
// its sub-communicators on host threads and the mailbox fake.
#include <catch2/catch.hpp>

#include <chorus/host.hpp>
#include <chorus/parallel/mesh.hpp>
#include <chorus/parallel/mesh_comms.hpp>

#include "host/harness.hpp"
#include "support/data_parallel_checks.hpp"
#include "support/run_on_every_communicator.hpp"

#include <string>
#include <vector>

namespace test_mesh {

using chorus::parallel::Mesh;
using Groups = std::vector<std::vector<int>>;

TEST_CASE("Megatron's 16 ranks with tp=2, pp=4 form its documented groups", "[parallel][mesh]") {
  const Mesh mesh = Mesh::megatron(16, 2, 4);
  CHECK(mesh.size("tp") == 2);
  CHECK(mesh.size("dp") == 2);
  CHECK(mesh.size("pp") == 4);
  CHECK(mesh.groups("tp") == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
  CHECK(mesh.groups("dp") == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(mesh.groups("pp") == Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
  CHECK(mesh.group_count("tp") == 16 / 2);
  CHECK(mesh.group_count("dp") == 16 / 2);
  CHECK(mesh.group_count("pp") == 16 / 4);
}

TEST_CASE("Mesh coordinates follow global = tp + dp*t + pp*t*d, and each rank is in one group per dimension",
          "[parallel][mesh]") {
  const Mesh mesh = Mesh::megatron(24, 2, 3);  // d = 4
  for (int rank = 0; rank < 24; ++rank) {
    const std::vector<int> c = mesh.coordinates(rank);
    CHECK(c[0] + c[1] * 2 + c[2] * 2 * 4 == rank);
    CHECK(mesh.rank_of(c) == rank);
    for (const char* dim : {"tp", "dp", "pp"}) {
      int memberships = 0;
      for (const std::vector<int>& group : mesh.groups(dim)) {
        for (int member : group) memberships += member == rank;
      }
      CHECK(memberships == 1);
      CHECK(mesh.group_of(rank, dim)[static_cast<std::size_t>(mesh.coordinate(rank, dim))] == rank);
    }
  }
}

TEST_CASE("PyTorch's DeviceMesh (dp=2, tp=4) is Mesh({tp 4, dp 2}): dimensions are listed fastest first",
          "[parallel][mesh]") {
  const Mesh mesh({{"tp", 4}, {"dp", 2}});
  CHECK(mesh.world_size() == 8);
  CHECK(mesh.groups("tp") == Groups{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(mesh.groups("dp") == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
}

TEST_CASE("Mesh rejects impossible layouts and lookups with chorus::Error", "[parallel][mesh]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(Mesh::megatron(16, 3, 4), Contains("world 16 is not divisible into tp 3 x pp 4"));
  CHECK_THROWS_WITH(Mesh::megatron(0, 1, 1), Contains("world 0"));
  CHECK_THROWS_WITH(Mesh({}), Contains("at least one dimension"));
  CHECK_THROWS_WITH(Mesh({{"tp", 2}, {"tp", 2}}), Contains("'tp' appears twice"));
  CHECK_THROWS_WITH(Mesh({{"tp", 0}}), Contains("'tp' has size 0"));
  CHECK_THROWS_WITH(Mesh({{"", 2}}), Contains("has no name"));
  const Mesh mesh = Mesh::megatron(8, 2, 2);
  CHECK_THROWS_WITH(mesh.coordinates(8), Contains("rank 8 is outside a mesh of 8 ranks"));
  CHECK_THROWS_WITH(mesh.size("ep"), Contains("no dimension named 'ep'"));
  CHECK_THROWS_WITH(mesh.rank_of({0, 2, 0}), Contains("coordinate 2 out of range for dimension 'dp'"));
  CHECK_THROWS_AS(mesh.groups("cp"), chorus::Error);
}

TEST_CASE("MeshComms splits one communicator per dimension on host threads", "[parallel][mesh][host]") {
  // 8: tp 2 x dp 2 x pp 2
  support::run_on_host("mesh comms", {1, 2, 3, 4, 8}, [](auto& comm) { return dp_checks::check_mesh_comms(comm); });
}

TEST_CASE("MeshComms splits one communicator per dimension on the mailbox fake", "[parallel][mesh][mailbox]") {
  support::run_on_mailbox("mesh comms", {4, 8}, [](auto& comm) { return dp_checks::check_mesh_comms(comm); });
}

TEST_CASE("MeshComms refuses a mesh of another size than the communicator", "[parallel][mesh][host]") {
  chorus::host::Team team(4);
  std::vector<std::string> messages(4);
  harness::run(team, [&](chorus::host::Comm& comm) {
    try {
      chorus::parallel::MeshComms<chorus::host::Comm> comms(comm, Mesh::megatron(8, 2, 2));
    } catch (const chorus::Error& e) {
      messages[static_cast<std::size_t>(comm.rank())] = e.what();
    }
    chorus::host::Comm none = comm.split(-1, 0);  // a communicator of no ranks
    try {
      chorus::parallel::MeshComms<chorus::host::Comm> comms(none, Mesh({{"dp", 1}}));
      messages[static_cast<std::size_t>(comm.rank())] += " | no error for a null communicator";
    } catch (const chorus::Error&) {
    }
  });
  for (const std::string& message : messages) {
    CHECK_THAT(message, Catch::Matchers::Contains("the mesh has 8 ranks but the communicator has 4"));
    CHECK_THAT(message, !Catch::Matchers::Contains("no error"));
  }
}

}  // namespace test_mesh
