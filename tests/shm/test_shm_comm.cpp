// chorus::shm::Comm in forked processes: the contract's generic checks, every algorithm of every
// collective against a naive reference (with slots small enough that steps span several), send/recv,
// split and the bootstrap's bad input.
#include <catch2/catch.hpp>

#include <chorus/shm.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "shm/process_harness.hpp"
#include "support/communicator_table.hpp"
#include "support/generic_checks.hpp"

namespace test_shm_comm {

using chorus::Algorithm;
using chorus::Collective;
using chorus::ErrorCode;
using chorus::ReduceOp;

void expect_clean(const std::vector<shm_harness::ChildResult>& results) {
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r);
    CHECK(results[r].report == "");
    CHECK(results[r].exit_code == 0);
  }
}

TEST_CASE("shm::Comm passes the generic communicator checks at 1 to 5 processes") {
  for (int ranks : {1, 2, 3, 4, 5}) {
    INFO(ranks << " processes");
    expect_clean(shm_harness::run_processes(ranks, [](chorus::bootstrap::Store& store, int rank, int size) {
      chorus::shm::Comm comm(store, rank, size);
      std::vector<std::string> failures = generic::generic_checks(comm);
      const auto automatic = generic::generic_checks(comm, Algorithm::automatic);
      failures.insert(failures.end(), automatic.begin(), automatic.end());
      return failures;
    }));
  }
}

// Every algorithm of every collective, float and int32, against sums computed here; 4 KiB slots so
// that the larger counts are cut into many slices and unsliced steps span several slots.
TEST_CASE("shm::Comm runs every algorithm of every collective, steps larger than a slot included") {
  for (int ranks : {2, 3, 4}) {
    INFO(ranks << " processes");
    expect_clean(shm_harness::run_processes(ranks, [](chorus::bootstrap::Store& store, int rank, int size) {
      chorus::shm::Options options;
      options.slot_bytes = 4096;
      options.slots = 2;
      chorus::shm::Comm comm(store, rank, size, options);
      generic::Failures f;
      const auto n = static_cast<std::size_t>(size);
      for (int a = 1; a < chorus::kAlgorithmCount; ++a) {
        const auto algorithm = static_cast<Algorithm>(a);
        for (std::size_t count : {std::size_t{1}, std::size_t{777}, std::size_t{5003}}) {
          const std::string what = chorus::detail::concat(chorus::to_string(algorithm), " count ", count);
          if (chorus::supports(Collective::all_reduce, algorithm)) {
            std::vector<std::int32_t> in = generic::values<std::int32_t>(rank, count), out(count), want(count);
            for (std::size_t i = 0; i < count; ++i) want[i] = generic::sum_over_ranks<std::int32_t>(size, i);
            comm.all_reduce(in.data(), out.data(), count, ReduceOp::sum, algorithm);
            f.expect("all_reduce " + what, out, want);
          }
          if (chorus::supports(Collective::reduce_scatter, algorithm)) {
            std::vector<float> in = generic::values<float>(rank, count * n), out(count), want(count);
            for (std::size_t i = 0; i < count; ++i) {
              want[i] = generic::sum_over_ranks<float>(size, static_cast<std::size_t>(rank) * count + i);
            }
            comm.reduce_scatter(in.data(), out.data(), count, ReduceOp::sum, algorithm);
            f.expect("reduce_scatter " + what, out, want);
          }
          if (chorus::supports(Collective::all_gather, algorithm)) {
            std::vector<std::int32_t> in = generic::values<std::int32_t>(rank, count), out(count * n), want(count * n);
            for (std::size_t p = 0; p < n; ++p) {
              for (std::size_t i = 0; i < count; ++i) want[p * count + i] = generic::value(static_cast<int>(p), i);
            }
            comm.all_gather(in.data(), out.data(), count, algorithm);
            f.expect("all_gather " + what, out, want);
          }
          if (chorus::supports(Collective::broadcast, algorithm)) {
            const int root = size / 2;
            std::vector<float> data = generic::values<float>(root, count), out(count, -9.0f);
            comm.broadcast(data.data(), out.data(), count, root, algorithm);
            f.expect("broadcast " + what, out, data);
          }
          if (chorus::supports(Collective::reduce, algorithm)) {
            const int root = size - 1;
            std::vector<std::int32_t> in = generic::values<std::int32_t>(rank, count), out(count), want(count);
            for (std::size_t i = 0; i < count; ++i) want[i] = generic::sum_over_ranks<std::int32_t>(size, i);
            comm.reduce(in.data(), out.data(), count, ReduceOp::sum, root, algorithm);
            if (rank == root) f.expect("reduce " + what, out, want);
          }
          if (chorus::supports(Collective::all_to_all, algorithm)) {
            std::vector<float> in = generic::values<float>(rank, count * n), out(count * n), want(count * n);
            for (std::size_t p = 0; p < n; ++p) {
              const std::vector<float> theirs = generic::values<float>(static_cast<int>(p), count, static_cast<std::size_t>(rank) * count);
              std::copy(theirs.begin(), theirs.end(), want.begin() + static_cast<std::ptrdiff_t>(p * count));
            }
            comm.all_to_all(in.data(), out.data(), count, algorithm);
            f.expect("all_to_all " + what, out, want);
          }
        }
      }
      return f.take();
    }));
  }
}

TEST_CASE("shm::Comm send is synchronous and messages larger than the FIFO arrive whole") {
  expect_clean(shm_harness::run_processes(2, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.slot_bytes = 4096;
    options.slots = 2;
    chorus::shm::Comm comm(store, rank, size, options);
    generic::Failures f;
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1024}, std::size_t{100001}}) {
      std::vector<std::int32_t> data = generic::values<std::int32_t>(0, count), got(count, -7);
      if (rank == 0) {
        comm.send(data.data(), count, 1);
      } else {
        comm.recv(got.data(), count, 0);
        f.expect(chorus::detail::concat("recv of ", count), got, data);
      }
    }
    return f.take();
  }));
}

TEST_CASE("shm::Comm split: groups by color ordered by key; color < 0 gives a null communicator") {
  expect_clean(shm_harness::run_processes(5, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Comm comm(store, rank, size);
    generic::Failures f;
    const int color = rank == 4 ? -1 : rank % 2;
    chorus::shm::Comm part = comm.split(color, -rank);  // keys reverse the order
    if (color < 0) {
      if (part || part.size() != 0 || part.rank() != -1) f.fail("color -1 did not give a null communicator");
      comm.barrier();
      return f.take();
    }
    const std::vector<int> members = color == 0 ? std::vector<int>{2, 0} : std::vector<int>{3, 1};
    if (part.size() != 2 || members[static_cast<std::size_t>(part.rank())] != rank) {
      f.fail(chorus::detail::concat("rank ", rank, " has rank ", part.rank(), " of ", part.size()));
    }
    std::vector<std::int32_t> mine{rank}, all(2, -1);
    part.all_gather(mine.data(), all.data(), 1);
    f.expect("all_gather in the split", all, std::vector<std::int32_t>(members.begin(), members.end()));
    generic::Failures inner;
    for (const std::string& failure : generic::generic_checks(part)) f.fail("split: " + failure);
    comm.barrier();
    return f.take();
  }));
}

TEST_CASE("shm::Comm refuses bad ranks, sizes and options with the value named") {
  expect_clean(shm_harness::run_processes(1, [](chorus::bootstrap::Store& store, int, int) {
    generic::Failures f;
    const auto refuses = [&](const std::string& what, const std::string& needle, auto&& make) {
      try {
        make();
        f.fail(what + ": no error");
      } catch (const chorus::Error& e) {
        if (e.code() != ErrorCode::invalid_argument || std::string(e.what()).find(needle) == std::string::npos) {
          f.fail(what + ": " + e.what());
        }
      }
    };
    refuses("rank 3 of 2", "rank 3 of 2", [&] { chorus::shm::Comm(store, 3, 2); });
    refuses("rank -1", "rank -1 of 2", [&] { chorus::shm::Comm(store, -1, 2); });
    refuses("size 0", "of 0 processes", [&] { chorus::shm::Comm(store, 0, 0); });
    chorus::shm::Options options;
    options.slot_bytes = 100;
    refuses("tiny slots", "Options::slot_bytes 100", [&] { chorus::shm::Comm(store, 0, 1, options); });
    options = {};
    options.slots = 1;
    refuses("one slot", "Options::slots 1", [&] { chorus::shm::Comm(store, 0, 1, options); });
    options = {};
    options.timeout_ms = -5;
    refuses("negative timeout", "Options::timeout_ms -5", [&] { chorus::shm::Comm(store, 0, 1, options); });
    return f.take();
  }));
}

TEST_CASE("shm::Comm's row in docs/communicator.md says what the code says") {
  using Comm = chorus::shm::Comm;
  const support::CommunicatorRow row = support::table_row("chorus::shm::Comm");
  CHECK(row.memory == chorus::memory_space_v<Comm>);
  CHECK(row.completes_on_return == chorus::completes_on_return_v<Comm>);
  CHECK(row.refuses_overlap);
  CHECK(row.checks_agreement);  // the mismatch cases: test_shm_faults
  expect_clean(shm_harness::run_processes(1, [](chorus::bootstrap::Store& store, int rank, int size) {
    Comm comm(store, rank, size);
    float x[4] = {};
    try {
      comm.all_reduce(x, x + 1, 2, ReduceOp::sum);
    } catch (const chorus::Error& e) {
      if (e.code() == ErrorCode::invalid_argument) return std::vector<std::string>{};
    }
    return std::vector<std::string>{"overlapping buffers were not refused with invalid_argument"};
  }));
}

TEST_CASE("shm::Comm dump_trace writes this rank's flight record") {
  shm_harness::TempDir dir;
  expect_clean(shm_harness::run_processes(2, [&](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Comm comm(store, rank, size);
    float x = 1.0f;
    comm.all_reduce(&x, &x, 1, ReduceOp::sum);
    comm.barrier();
    const std::string path = dir.path() + "/rank" + std::to_string(rank) + ".json";
    comm.dump_trace(path);
    std::ifstream file(path);
    const std::string json((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::vector<std::string> failures;
    for (const std::string& needle : {std::string("\"format\": \"chorus-flight-record\""), "\"rank\": " + std::to_string(rank),
                                      std::string("\"collective\": \"all_reduce\""), std::string("\"sequence\": 2")}) {
      if (json.find(needle) == std::string::npos) failures.push_back("rank " + std::to_string(rank) + "'s dump lacks " + needle);
    }
    return failures;
  }));
}

}  // namespace test_shm_comm
