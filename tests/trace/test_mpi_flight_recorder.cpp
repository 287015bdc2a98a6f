// The MPI backend's flight recorder, one process per rank under mpirun: each rank's record of its
// calls, and after one rank skips a call, every rank's failed call. Each process holds only its own
// rank's record, so each checks its own dump. Its own main: MPI initialised around the whole run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chorus/mpi.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

using chorus::ReduceOp;
using json = nlohmann::json;

// This rank's record through dump_trace, read back.
json dumped(const chorus::mpi::Comm& comm) {
  char path[] = "/tmp/chorus-mpi-record-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  comm.dump_trace(path);
  std::ifstream file(path);
  const json record = json::parse(file);
  std::remove(path);
  REQUIRE(record["ranks"].size() == 1);
  CHECK(record["ranks"][0]["rank"] == comm.rank());
  return record["ranks"][0]["calls"];
}

}  // namespace

TEST_CASE("each rank records its calls", "[mpi][flight_recorder]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<float> data(1003, 1.0f);
  std::vector<int> ints(3, comm.rank());
  comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum, chorus::Algorithm::ring);
  comm.broadcast(ints.data(), ints.data(), ints.size(), comm.size() - 1);
  comm.barrier();
  const json calls = dumped(comm);
  REQUIRE(calls.size() == 3);
  CHECK(calls[0]["collective"] == "all_reduce");
  CHECK(calls[0]["algorithm"] == "ring");
  CHECK(calls[0]["count"] == 1003);
  CHECK(calls[0]["steps"] == 4 * (comm.size() - 1));
  CHECK(calls[0]["step"] == calls[0]["steps"]);  // it got past its last step
  CHECK(calls[1]["collective"] == "broadcast");
  CHECK(calls[1]["root"] == comm.size() - 1);
  CHECK(calls[1]["type"] == "int32");
  CHECK(calls[2]["collective"] == "barrier");
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(calls[i]["sequence"] == i + 1);
    CHECK(calls[i]["state"] == "done");
    CHECK(calls[i]["end_ns"].get<std::int64_t>() >= calls[i]["start_ns"].get<std::int64_t>());
  }
}

TEST_CASE("a rank that skips a call: every rank's call 2 is recorded failed", "[mpi][flight_recorder]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<float> data(16, 1.0f);
  bool threw = false;
  try {
    comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
    if (comm.rank() != 1) comm.broadcast(data.data(), data.data(), 4, 0);
    comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
  } catch (const chorus::Error& e) {
    threw = true;
    CHECK((e.code() == chorus::ErrorCode::mismatch || e.code() == chorus::ErrorCode::peer_failed));
  }
  CHECK(threw);
  const json calls = dumped(comm);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0]["state"] == "done");
  CHECK(calls[1]["sequence"] == 2);
  CHECK(calls[1]["collective"] == (comm.rank() == 1 ? "all_reduce" : "broadcast"));
  CHECK(calls[1]["state"] == "failed");
}

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  return Catch::Session().run(argc, argv);
}
