// docs/communicator.md's table of what each communicator does agrees with the code: one row per
// communicator type, and the memory and completion columns equal memory_space_v and
// completes_on_return_v for every type this program compiles (host::Comm here; the MPI types in
// tests/mpi, shm::Comm in tests/shm, the device types where they compile). The parser refuses a table out of shape.
#include <catch2/catch.hpp>

#include <chorus/core/memory_space.hpp>
#include <chorus/host.hpp>

#include "support/communicator_table.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace test_communicator_table {

using chorus::ErrorCode;
using chorus::MemorySpace;
using support::communicator_table;
using support::table_row;

namespace {

const std::string kHeader =
    "| communicator | completes on return | memory | checks agreement | refuses overlapping buffers | takes Algorithm on |\n"
    "|---|---|---|---|---|---|\n";

std::string table_error(const std::string& rows) {
  try {
    communicator_table("# title\n\n" + kHeader + rows + "\nafter\n");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

// The code of the error `fn` throws on rank 0 of a `ranks`-rank team, or "none".
template <class Fn>
std::string error_code_of(int ranks, Fn fn) {
  chorus::host::Team team(ranks);
  std::vector<std::string> codes(static_cast<std::size_t>(ranks), "none");
  team.run([&](chorus::host::Comm& comm) {
    try {
      fn(comm);
    } catch (const chorus::Error& e) {
      codes[static_cast<std::size_t>(comm.rank())] = chorus::to_string(e.code());
    }
  });
  return codes[0];
}

}  // namespace

TEST_CASE("the table has one row for every communicator type", "[table]") {
  std::set<std::string> names;
  for (const support::CommunicatorRow& row : communicator_table(support::communicator_doc())) names.insert(row.name);
  CHECK(names == std::set<std::string>{"chorus::host::Comm", "chorus::mpi::Comm", "chorus::mpi::NativeComm",
                                       "chorus::shm::Comm", "chorus::nccl::Comm::View", "chorus::cuda::RankComm", "chorus::cuda::IpcComm",
                                       "chorus::cuda::twin::RankComm", "chorus::cuda::twin::IpcRank"});
}

TEST_CASE("host::Comm's row says what the code says", "[table]") {
  using Comm = chorus::host::Comm;
  const support::CommunicatorRow row = table_row("chorus::host::Comm");
  CHECK(row.memory == chorus::memory_space_v<Comm>);
  CHECK(row.completes_on_return == chorus::completes_on_return_v<Comm>);
  // The other columns, by behaviour: overlapping buffers are refused, ranks that disagree get mismatch.
  CHECK(row.refuses_overlap);
  CHECK(error_code_of(1, [](Comm& comm) {
          float x[4] = {};
          comm.all_reduce(x, x + 1, 2, chorus::ReduceOp::sum);
        }) == chorus::to_string(ErrorCode::invalid_argument));
  CHECK(row.checks_agreement);
  CHECK(error_code_of(2, [](Comm& comm) {
          float x[2] = {};
          comm.all_reduce(x, x, static_cast<std::size_t>(comm.rank()) + 1, chorus::ReduceOp::sum);
        }) == chorus::to_string(ErrorCode::mismatch));
}

TEST_CASE("the device rows say device memory and completion on the stream", "[table]") {
  // Their types do not compile here (the cuda and nccl tests tie them to the traits); the rule itself must
  // hold in the doc.
  for (const char* name : {"chorus::nccl::Comm::View", "chorus::cuda::RankComm", "chorus::cuda::IpcComm"}) {
    const support::CommunicatorRow row = table_row(name);
    INFO(name);
    CHECK(row.memory == MemorySpace::device);
    CHECK_FALSE(row.completes_on_return);
  }
}

TEST_CASE("the table parser refuses a table out of shape", "[table]") {
  const std::string good = "| `chorus::x::Comm` | yes | host | yes: compared | yes | every collective |\n";
  const std::vector<support::CommunicatorRow> rows = communicator_table(kHeader + good);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == "chorus::x::Comm");
  CHECK(rows[0].completes_on_return);
  CHECK(rows[0].memory == MemorySpace::host);
  CHECK(rows[0].checks_agreement);
  CHECK(rows[0].agreement == "yes: compared");
  CHECK(rows[0].refuses_overlap);
  CHECK(rows[0].algorithms == "every collective");

  CHECK_THAT(table_error("| `a` | maybe | host | yes | yes | all |\n"), Catch::Contains("completes on return is 'maybe'"));
  CHECK_THAT(table_error("| `a` | yes | gpu | yes | yes | all |\n"), Catch::Contains("memory is 'gpu', not host or device"));
  CHECK_THAT(table_error("| `a` | yes | host | perhaps: so | yes | all |\n"), Catch::Contains("checks agreement is 'perhaps'"));
  CHECK_THAT(table_error("| `a` | yes | host | yes | yes |\n"), Catch::Contains("5 columns, not 6"));
  CHECK_THAT(table_error("| a | yes | host | yes | yes | all |\n"), Catch::Contains("not in backticks"));
  CHECK_THAT(table_error(good + good), Catch::Contains("chorus::x::Comm has a second row"));
  CHECK_THAT(table_error(""), Catch::Contains("the table has no rows"));
  CHECK(table_error(good) == "no error");
  CHECK_THROWS_WITH(communicator_table("| communicator | memory |\n"), Catch::Contains("no table whose header is"));
  CHECK_THROWS_WITH(table_row("chorus::no::Such"), "docs/communicator.md has no row for chorus::no::Such");
}

}  // namespace test_communicator_table
