// mpi::Comm and mpi::NativeComm across real processes (mpirun -np 4): the generic checks every
// communicator passes, bit-identical results to the host backend for every algorithm, and the
// error contract (bad arguments, mismatches, skipped calls, timeouts, failed sub-communicators).
#include <catch2/catch.hpp>

#include <chorus/bench/call.hpp>
#include <chorus/host.hpp>
#include <chorus/mpi.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpi_harness.hpp"
#include "support/communicator_table.hpp"
#include "support/generic_checks.hpp"

using chorus::Algorithm;
using chorus::Collective;
using chorus::ErrorCode;
using chorus::ReduceOp;
using mpi_harness::attempt;
using mpi_harness::gather_strings;
using mpi_harness::Outcome;

namespace {

// Sets CHORUS_TIMEOUT_MS for one test case.
struct TimeoutFor {
  explicit TimeoutFor(const char* ms) { setenv("CHORUS_TIMEOUT_MS", ms, 1); }
  ~TimeoutFor() { setenv("CHORUS_TIMEOUT_MS", "20000", 1); }
};

std::string describe(const Outcome& o) {
  return o.threw ? std::string(chorus::to_string(o.code)) + ": " + o.message : std::string("no error");
}

// Sums of these differ with the order of the additions, so equal bits mean the same order.
std::vector<float> inexact(int rank, std::size_t count) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<float>(std::sin(rank * 7919.0 + static_cast<double>(i)) * 1e3);
  return v;
}

}  // namespace

TEST_CASE("mpi::Comm passes the generic communicator checks", "[mpi][generic]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  REQUIRE(comm.size() == mpi_harness::world_size());
  CHECK(gather_strings(generic::generic_checks(comm)) == std::vector<std::string>{});
}

TEST_CASE("mpi::NativeComm passes the generic communicator checks", "[mpi][generic]") {
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  CHECK(gather_strings(generic::generic_checks(comm, Algorithm::automatic)) == std::vector<std::string>{});
}

TEST_CASE("every algorithm over MPI gives the host backend's bits", "[mpi][determinism]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  const int n = comm.size(), me = comm.rank();
  const std::size_t count = 1001;  // below both backends' pipelining slice: the same schedule
  std::vector<std::string> failures;
  for (int c = 0; c < chorus::kCollectiveCount; ++c) {
    const auto collective = static_cast<Collective>(c);
    for (int a = 1; a <= static_cast<int>(Algorithm::pairwise); ++a) {
      const auto algorithm = static_cast<Algorithm>(a);
      if (!chorus::supports(collective, algorithm)) continue;
      const std::size_t in_count = chorus::send_count(collective, count, n);
      const std::size_t out_count = chorus::recv_count(collective, count, n);
      std::vector<float> over_mpi(out_count, -1.0f), over_threads(out_count, -1.0f);
      const std::vector<float> input = inexact(me, in_count);
      chorus::bench::call_collective(comm, collective, input.data(), over_mpi.data(), count, ReduceOp::sum, 1,
                                     algorithm);
      chorus::host::Team team(n);
      team.run([&](chorus::host::Comm& local) {
        const std::vector<float> in = inexact(local.rank(), in_count);
        std::vector<float> out(out_count, -1.0f);
        chorus::bench::call_collective(local, collective, in.data(), out.data(), count, ReduceOp::sum, 1, algorithm);
        if (local.rank() == me) over_threads = out;
      });
      if (std::memcmp(over_mpi.data(), over_threads.data(), out_count * sizeof(float)) != 0) {
        failures.push_back(chorus::detail::concat(chorus::to_string(collective), " ", chorus::to_string(algorithm),
                                                  " differs from the host backend on rank ", me));
      }
    }
  }
  CHECK(gather_strings(failures) == std::vector<std::string>{});
}

TEST_CASE("a bad argument fails on its rank alone and leaves the communicator usable", "[mpi][errors]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<float> data(8, 1.0f);
  const Outcome bad_root = attempt([&] { comm.broadcast(data.data(), data.data(), data.size(), comm.size()); });
  CHECK(bad_root.threw);
  CHECK(bad_root.code == ErrorCode::invalid_argument);
  CHECK_THAT(bad_root.message, Catch::Contains("broadcast") && Catch::Contains("root"));
  const Outcome null_buffer = attempt([&] { comm.all_reduce<float>(nullptr, data.data(), 8, ReduceOp::sum); });
  CHECK(null_buffer.code == ErrorCode::invalid_argument);
  comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
  CHECK(data[7] == static_cast<float>(comm.size()));
}

// Host memory, complete on return, as docs/communicator.md's row says; wait() returns at once and refuses a
// null communicator, default-constructed or from split with a negative colour.
template <class Comm>
void check_completion(const char* row_name) {
  STATIC_REQUIRE(chorus::memory_space_v<Comm> == chorus::MemorySpace::host);
  STATIC_REQUIRE(chorus::completes_on_return_v<Comm>);
  const support::CommunicatorRow row = support::table_row(row_name);
  CHECK(row.memory == chorus::memory_space_v<Comm>);
  CHECK(row.completes_on_return == chorus::completes_on_return_v<Comm>);
  Comm comm(MPI_COMM_WORLD);
  int x = comm.rank() + 1;
  comm.all_reduce(&x, &x, 1, ReduceOp::sum);
  comm.wait();
  CHECK(x == comm.size() * (comm.size() + 1) / 2);
  comm.barrier();  // wait() is not collective: the ranks are still in step
  const std::string refused = "chorus::wait: called on a null communicator";
  CHECK_THAT(attempt([] { Comm().wait(); }).message, Catch::StartsWith(refused));
  Comm none = comm.split(-1, 0);
  CHECK_THAT(attempt([&] { none.wait(); }).message, Catch::StartsWith(refused));
}

TEST_CASE("mpi::Comm and NativeComm complete on return; wait() is a check and nothing else", "[mpi][completion]") {
  check_completion<chorus::mpi::Comm>("chorus::mpi::Comm");
  check_completion<chorus::mpi::NativeComm>("chorus::mpi::NativeComm");
}

TEST_CASE("send and recv give the shared check's messages over MPI", "[mpi][errors]") {
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  const std::string me = "chorus::send on rank " + std::to_string(comm.rank()) + ": ";
  int value = 0;
  CHECK(attempt([&] { comm.send(&value, 1, comm.size()); }).message ==
        me + "peer " + std::to_string(comm.size()) + " is not a rank of this " + std::to_string(comm.size()) +
            "-rank communicator");
  CHECK(attempt([&] { comm.send<int>(nullptr, 2, (comm.rank() + 1) % comm.size()); }).message ==
        me + "data buffer is null with count 2");
  CHECK(attempt([&] { comm.send(&value, 1, static_cast<chorus::DataType>(42), (comm.rank() + 1) % comm.size()); }).message ==
        me + "data type 42 is not a chorus::DataType");
  comm.barrier();  // nothing was sent: the communicator still works
}

TEST_CASE("ranks that pass different counts all get chorus::Error", "[mpi][mismatch]") {
  const mpi_harness::Settle settle;
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  const int me = comm.rank();
  std::vector<float> data(100, 1.0f);
  const int culprit = comm.size() - 1;
  const std::size_t count = me == culprit ? 99 : 100;
  const Outcome o = attempt([&] { comm.all_reduce(data.data(), data.data(), count, ReduceOp::sum); });
  INFO("rank " << me << ": " << describe(o));
  CHECK(o.threw);
  CHECK(o.code == ErrorCode::mismatch);  // released ranks get the cause's code, as on the host backend
  // The rank after the culprit compares descriptors and names the counts; a rank whose message from
  // it came up short names the bytes. The others were released with one of those reports.
  CHECK_THAT(o.message, Catch::Contains("count 99") || Catch::Contains("count 100") ||
                            Catch::Contains("rank " + std::to_string(culprit) + " sent 396 bytes"));
  // The communicator stays failed.
  const Outcome after = attempt([&] { comm.barrier(); });
  CHECK(after.code == ErrorCode::mismatch);
  CHECK_THAT(after.message, Catch::Contains("barrier") && Catch::Contains("failed: chorus::all_reduce"));
}

TEST_CASE("a rank that calls a different collective is reported, on every rank", "[mpi][mismatch]") {
  const mpi_harness::Settle settle;
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> data(16, 1);
  const Outcome o = attempt([&] {
    if (comm.rank() == comm.size() - 1) {
      comm.broadcast(data.data(), data.data(), data.size(), 0);  // skipped the all_reduce
    } else {
      comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
    }
  });
  INFO("rank " << comm.rank() << ": " << describe(o));
  CHECK(o.threw);
  CHECK_THAT(o.message, Catch::Contains("collective all_reduce") || Catch::Contains("collective broadcast"));
}

TEST_CASE("a rank that never calls makes the others time out, naming it", "[mpi][timeout]") {
  const mpi_harness::Settle settle;
  TimeoutFor timeout("1500");
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  const int late = comm.size() - 1;
  std::vector<float> data(1000, 1.0f);
  Outcome o;
  if (comm.rank() == late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));  // past the others' timeout and grace
    o = attempt([&] { comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum); });
    // Released by the failure already reported, before touching any data.
    CHECK_THAT(o.message, Catch::Contains("released because rank"));
  } else {
    o = attempt([&] { comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum); });
  }
  CHECK(o.code == ErrorCode::timeout);
  INFO("rank " << comm.rank() << ": " << describe(o));
  CHECK(o.threw);
  CHECK_THAT(o.message, Catch::Contains("rank " + std::to_string(late) + " has not reached this call"));
}

TEST_CASE("recv of the wrong size is a mismatch and releases the sender", "[mpi][p2p]") {
  const mpi_harness::Settle settle;
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<double> data(12, 3.0);
  Outcome o;
  if (comm.rank() == 0) o = attempt([&] { comm.send(data.data(), 10, 1); });
  if (comm.rank() == 1) o = attempt([&] { comm.recv(data.data(), 12, 0); });
  INFO("rank " << comm.rank() << ": " << describe(o));
  if (comm.rank() == 1) {
    CHECK(o.code == ErrorCode::mismatch);
    CHECK_THAT(o.message, Catch::Contains("rank 0 sent 80 bytes; this recv expects 96"));
  }
  if (comm.rank() == 0) {
    CHECK(o.code == ErrorCode::mismatch);
    CHECK_THAT(o.message, Catch::Contains("released because rank 1 failed"));
  }
}

TEST_CASE("a failure in a sub-communicator releases the whole family", "[mpi][split]") {
  const mpi_harness::Settle settle;
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  chorus::mpi::Comm half = comm.split(comm.rank() % 2, comm.rank());
  chorus::mpi::Comm none = comm.split(-1, 0);
  CHECK(!none);
  CHECK(none.size() == 0);
  CHECK(attempt([&] { none.barrier(); }).code == ErrorCode::invalid_argument);
  std::vector<float> data(10, 1.0f);
  Outcome o;
  if (comm.rank() % 2 == 0) {
    // The even half disagrees on the count.
    o = attempt([&] { half.all_reduce(data.data(), data.data(), comm.rank() == 0 ? 10 : 9, ReduceOp::sum); });
  } else {
    // The odd half agrees, but hears of the even half's failure: in its all_reduce if the report
    // is fast, else at its next call.
    o = attempt([&] {
      half.all_reduce(data.data(), data.data(), 10, ReduceOp::sum);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      half.barrier();
    });
  }
  CHECK(o.code == ErrorCode::mismatch);
  INFO("rank " << comm.rank() << ": " << describe(o));
  CHECK(o.threw);
  CHECK_THAT(o.message, Catch::Contains("count 10") || Catch::Contains("count 9"));
}

TEST_CASE("mpi::NativeComm refuses what MPI cannot do", "[mpi][native]") {
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  std::vector<float> data(4, 1.0f);
  const Outcome forced = attempt([&] { comm.all_reduce(data.data(), data.data(), 4, ReduceOp::sum, Algorithm::ring); });
  CHECK(forced.code == ErrorCode::unsupported);
  CHECK_THAT(forced.message, Catch::Contains("ring cannot be forced"));
  // Refused before any buffer is touched, so a small buffer stands in for a huge one.
  const Outcome huge = attempt([&] { comm.all_reduce(data.data(), data.data(), std::size_t{1} << 31, ReduceOp::sum); });
  CHECK(huge.code == ErrorCode::unsupported);
  CHECK_THAT(huge.message, Catch::Contains("INT_MAX"));
  comm.all_reduce(data.data(), data.data(), 4, ReduceOp::avg);
  CHECK(data[0] == 1.0f);
}

TEST_CASE("half and bfloat16 reduce through MPI's user-defined ops", "[mpi][native]") {
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  const int n = comm.size();
  std::vector<chorus::half> h(33, chorus::half(1.5f));
  std::vector<chorus::bfloat16> b(33, chorus::bfloat16(static_cast<float>(comm.rank() + 1)));
  comm.all_reduce(h.data(), h.data(), h.size(), ReduceOp::sum);
  comm.all_reduce(b.data(), b.data(), b.size(), ReduceOp::max);
  CHECK(static_cast<float>(h[32]) == 1.5f * static_cast<float>(n));
  CHECK(static_cast<float>(b[0]) == static_cast<float>(n));
}

TEST_CASE("MPI_Init is required, and MPI_COMM_NULL is refused", "[mpi][errors]") {
  CHECK_THROWS_WITH(chorus::mpi::Comm(MPI_COMM_NULL), Catch::Contains("MPI_COMM_NULL"));
}

TEST_CASE("split against another call fails on every rank instead of hanging in MPI_Comm_split", "[mpi][split]") {
  const mpi_harness::Settle settle;
  TimeoutFor timeout("3000");
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  const Outcome o = attempt([&] {
    if (comm.rank() == 2) {
      comm.barrier();
    } else {
      chorus::mpi::Comm part = comm.split(0, comm.rank());
    }
  });
  INFO("rank " << comm.rank() << ": " << describe(o));
  CHECK(o.code == ErrorCode::mismatch);
  CHECK_THAT(o.message, Catch::Contains("split") || Catch::Contains("barrier"));
}

TEST_CASE("NativeComm never posts an MPI collective the ranks disagree on", "[mpi][native][mismatch]") {
  // Counts 100, 100, 99, 99: ranks 1 and 3 each agree with their ring neighbour, so only a check
  // across all ranks keeps them from posting mismatched MPI collectives (which abort the job).
  const mpi_harness::Settle settle;
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  std::vector<float> data(100, 1.0f);
  const std::size_t count = comm.rank() < comm.size() / 2 ? 100 : 99;
  const Outcome o = attempt([&] { comm.broadcast(data.data(), data.data(), count, 0); });
  INFO("rank " << comm.rank() << ": " << describe(o));
  CHECK(o.code == ErrorCode::mismatch);
  CHECK_THAT(o.message, Catch::Contains("count"));
}

namespace {
// The last rank broadcasts from root 1, the others from root 0: with 4 ranks, rank 1's neighbours agree with it, and
// with chorus's schedules its own messages may all have the right sizes, yet it must fail in the
// call (every rank votes before returning), never return data from a call the others disagreed on.
template <class Comm>
void expect_every_rank_fails_on_a_root_mismatch() {
  const mpi_harness::Settle settle;
  Comm comm(MPI_COMM_WORLD);
  std::vector<std::int64_t> data(64, comm.rank());
  const Outcome o = attempt(
      [&] { comm.broadcast(data.data(), data.data(), data.size(), comm.rank() == comm.size() - 1 ? 1 : 0); });
  INFO("rank " << comm.rank() << ": " << describe(o));
  CHECK(o.code == ErrorCode::mismatch);
  CHECK_THAT(o.message, Catch::Contains("root"));
}
}  // namespace

TEST_CASE("a rank with another root fails in the call, not only its neighbours", "[mpi][mismatch]") {
  expect_every_rank_fails_on_a_root_mismatch<chorus::mpi::Comm>();
  expect_every_rank_fails_on_a_root_mismatch<chorus::mpi::NativeComm>();
}
