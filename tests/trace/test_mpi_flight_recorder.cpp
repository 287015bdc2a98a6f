// The MPI backend's flight recorder, one process per rank under mpirun: each rank's record of its
// calls, and after one rank skips a call, every rank's failed call, its own record in its error and
// its dump under CHORUS_TRACE_DUMP; a call whose MPI_Isend fails is recorded failed. Each process
// holds only its own rank's record, so each checks its own dump. Its own main: MPI initialised
// around the whole run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chorus/mpi.hpp>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

// MPI's profiling interface: this program's MPI_Isend replaces the library's (which is PMPI_Isend
// under another name), so a test can make one call's descriptor send fail as a broken network would.
namespace {
std::atomic<bool> fail_next_descriptor_send{false};
}  // namespace

extern "C" int MPI_Isend(const void* buffer, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  if (tag == chorus::mpi::detail::kDescriptorTag && fail_next_descriptor_send.exchange(false)) return MPI_ERR_OTHER;
  return PMPI_Isend(buffer, count, type, peer, tag, comm, request);
}

namespace {

using Catch::Matchers::Contains;
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

namespace {

// A directory every rank sees: rank 0 makes it and tells the others.
std::string shared_directory() {
  char path[256] = "/tmp/chorus-mpi-dumps-XXXXXX";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) REQUIRE(mkdtemp(path) != nullptr);
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      if (entry->d_name[0] != '.') names.push_back(entry->d_name);
    }
    closedir(d);
  }
  return names;
}

}  // namespace

// Each rank's error says where that rank was (its own record is all it has) and where its dump is;
// the dump is that rank's record alone, in a file named after the communicator, the rank and the pid.
// Rank 1 is late into call 2 (it sleeps): it is released when it gets there, and dumps then.
TEST_CASE("CHORUS_TRACE_DUMP: every rank that fails or is released dumps its own record", "[mpi][flight_recorder][dump]") {
  const std::string dir = shared_directory();
  setenv("CHORUS_TRACE_DUMP", dir.c_str(), 1);
  std::string message;
  {
    chorus::mpi::Comm comm(MPI_COMM_WORLD);
    std::vector<float> data(16, 1.0f);
    try {
      comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
      if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (comm.rank() == comm.size() - 1) {
        comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);  // skips the broadcast
      } else {
        comm.broadcast(data.data(), data.data(), 4, 0);
      }
      FAIL("no error");
    } catch (const chorus::Error& e) {
      message = e.what();
    }
    INFO(message);
    const std::string tail = "-rank" + std::to_string(comm.rank()) + "-pid" + std::to_string(getpid()) + ".json";
    const std::size_t at = message.find(dir + "/chorus-flight-record-comm");
    REQUIRE(at != std::string::npos);
    const std::string mine = message.substr(at, message.find(".json", at) + 5 - at);
    CHECK(mine.size() > tail.size());
    CHECK(mine.substr(mine.size() - tail.size()) == tail);
    CHECK_THAT(message, Contains("this rank's flight record: rank " + std::to_string(comm.rank()) +
                                 ": last done call 1 all_reduce 16 x float32 sum "));
    CHECK_THAT(message, Contains("; now call 2 " + std::string(comm.rank() == comm.size() - 1 ? "all_reduce" : "broadcast")));
    CHECK_THAT(message, Contains(": failed"));
    CHECK_THAT(message, Contains("this rank's record: " + mine + " (chorus-trace-summary " + dir + "/*.json"));
    std::ifstream file(mine);
    REQUIRE(file);
    const json record = json::parse(file);
    CHECK(record["version"] == 2);
    CHECK(record["size"] == comm.size());
    CHECK(record["pid"] == getpid());
    CHECK(record["communicator"].get<std::string>().rfind("pid", 0) == 0);
    REQUIRE(record["ranks"].size() == 1);
    CHECK(record["ranks"][0]["rank"] == comm.rank());
    const json& calls = record["ranks"][0]["calls"];
    REQUIRE(calls.size() == 2);
    CHECK(calls[1]["state"] == "failed");
    // Every rank's dump names the same communicator.
    std::string name = record["communicator"].get<std::string>();
    std::string root_name = name;
    root_name.resize(128, '\0');
    MPI_Bcast(&root_name[0], 128, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK(name == std::string(root_name.c_str()));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(files_in(dir).size() == static_cast<std::size_t>(size));
  unsetenv("CHORUS_TRACE_DUMP");
  MPI_Barrier(MPI_COMM_WORLD);
  for (const std::string& name : files_in(dir)) std::remove((dir + "/" + name).c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) rmdir(dir.c_str());
}

// A call that fails before its first wait (here MPI_Isend of its descriptor) is recorded failed, and
// stays failed: the next calls on the communicator must not close it as done. A rank slower into
// call 2 than another's failure is released as it enters, before its own MPI_Isend: failed too.
TEST_CASE("a call whose MPI_Isend fails is recorded failed", "[mpi][flight_recorder][isend]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<float> data(16, 1.0f);
  comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
  MPI_Barrier(MPI_COMM_WORLD);  // every rank is past call 1 before any call 2 fails
  fail_next_descriptor_send = true;
  std::string message;
  try {
    comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
  } catch (const chorus::Error& e) {
    message = e.what();
  }
  const bool released = fail_next_descriptor_send.exchange(false);
  INFO(message);
  CHECK_THAT(message, Contains(released ? "released because rank " : "MPI_Isend failed"));
  CHECK_THAT(message, Contains("this rank's flight record: rank " + std::to_string(comm.rank()) +
                               ": last done call 1 all_reduce 16 x float32 sum"));
  CHECK_THAT(message, Contains("now call 2 all_reduce 16 x float32 sum"));
  // The next calls fail (the communicator has failed) and must leave call 2's record alone.
  const int peer = comm.rank() ^ 1;
  if (peer < comm.size()) {
    CHECK_THROWS_AS(comm.rank() % 2 == 0 ? comm.send(data.data(), 1, peer) : comm.recv(data.data(), 1, peer),
                    chorus::Error);
  }
  CHECK_THROWS_AS(comm.barrier(), chorus::Error);
  const json calls = dumped(comm);
  REQUIRE(calls.size() == 3);
  CHECK(calls[0]["state"] == "done");
  CHECK(calls[1]["sequence"] == 2);
  CHECK(calls[1]["state"] == "failed");
  CHECK(calls[1]["end_ns"].get<std::int64_t>() >= calls[1]["start_ns"].get<std::int64_t>());
  CHECK(calls[2]["collective"] == "barrier");
  CHECK(calls[2]["state"] == "failed");
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  return Catch::Session().run(argc, argv);
}
