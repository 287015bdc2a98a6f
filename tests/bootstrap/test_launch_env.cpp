// launch_info() reads each launcher's variables, in precedence order, and refuses malformed values.
#include <catch2/catch.hpp>

#include <chorus/bootstrap/launch_env.hpp>

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace test_launch_env {

using chorus::bootstrap::launch_info;
using chorus::bootstrap::LaunchInfo;
using chorus::bootstrap::local_device;

namespace {
const char* const kAllVariables[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"};

// A clean environment for one test, whatever launched the test program.
struct Environment {
  Environment(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const char* name : kAllVariables) unsetenv(name);
    for (const auto& v : values) setenv(v.first, v.second, 1);
  }
  ~Environment() {
    for (const char* name : kAllVariables) unsetenv(name);
  }
};
}  // namespace

TEST_CASE("no launcher: one process", "[bootstrap]") {
  Environment env({});
  const LaunchInfo info = launch_info();
  CHECK(info.launcher == "none");
  CHECK(info.rank == 0);
  CHECK(info.size == 1);
  CHECK(local_device(1, info) == 0);
}

TEST_CASE("each launcher's variables", "[bootstrap]") {
  SECTION("Open MPI") {
    Environment env({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
    const LaunchInfo info = launch_info();
    CHECK(info.launcher == "openmpi");
    CHECK(info.rank == 5);
    CHECK(info.size == 8);
    CHECK(info.local_rank == 1);
    CHECK(info.local_size == 4);
  }
  SECTION("torchrun") {
    Environment env({{"RANK", "3"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "8"}});
    const LaunchInfo info = launch_info();
    CHECK(info.launcher == "torchrun");
    CHECK(info.rank == 3);
    CHECK(info.size == 16);
    CHECK(local_device(8, info) == 3);
  }
  SECTION("MPICH") {
    Environment env({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}});
    CHECK(launch_info().launcher == "mpich");
    CHECK(launch_info().rank == 2);
  }
  SECTION("Slurm, which gives no local size") {
    Environment env({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}});
    const LaunchInfo info = launch_info();
    CHECK(info.launcher == "slurm");
    CHECK(info.local_rank == 3);
    CHECK(info.local_size == 0);
  }
  SECTION("Open MPI wins over torchrun's variables left in the environment") {
    Environment env({{"RANK", "9"}, {"WORLD_SIZE", "10"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
    CHECK(launch_info().launcher == "openmpi");
    CHECK(launch_info().rank == 1);
  }
}

TEST_CASE("malformed or inconsistent variables are errors naming the variable", "[bootstrap]") {
  {
    Environment env({{"RANK", "two"}, {"WORLD_SIZE", "4"}});
    CHECK_THROWS_WITH(launch_info(), Catch::Contains("RANK='two'"));
  }
  {
    Environment env({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
    CHECK_THROWS_WITH(launch_info(), Catch::Contains("RANK=4 is not below WORLD_SIZE=4"));
  }
  {
    Environment env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}});
    CHECK_THROWS_WITH(launch_info(), Catch::Contains("OMPI_COMM_WORLD_SIZE='0'"));
  }
  {
    Environment env({{"RANK", "-1"}, {"WORLD_SIZE", "4"}});
    CHECK_THROWS_WITH(launch_info(), Catch::Contains("RANK='-1'"));
  }
}

TEST_CASE("local_device refuses more processes than devices", "[bootstrap]") {
  LaunchInfo info;
  info.rank = 6;
  info.local_rank = 2;
  info.local_size = 4;
  CHECK(local_device(4, info) == 2);
  CHECK_THROWS_WITH(local_device(2, info), Catch::Contains("local rank 2 of 4 processes") &&
                                               Catch::Contains("only 2 devices"));
  CHECK_THROWS_WITH(local_device(0, info), Catch::Contains("0 devices visible"));
}

}  // namespace test_launch_env
