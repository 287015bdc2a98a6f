// chorus::shm::Comm's failure behaviour across processes: mismatched calls, an absent rank, a rank
// killed with SIGKILL mid-loop, abort(), a stale segment name left by a killed job, and a wrong
// WORLD_SIZE. Every rank must end with the right chorus::Error, in bounded time, and nothing of chorus
// may stay in /dev/shm.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chorus/shm.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "shm/process_harness.hpp"
#include "support/generic_checks.hpp"

namespace test_shm_faults {

using chorus::Algorithm;
using chorus::ErrorCode;
using chorus::ReduceOp;
using Clock = std::chrono::steady_clock;

// "" when `fn` throws chorus::Error with `code` and a message holding `needle`, else what happened.
template <class Fn>
std::string expect_error(const std::string& what, ErrorCode code, const std::string& needle, Fn&& fn) {
  try {
    fn();
  } catch (const chorus::Error& e) {
    if (e.code() == code && std::string(e.what()).find(needle) != std::string::npos) return "";
    return what + ": got " + chorus::to_string(e.code()) + ": " + e.what();
  }
  return what + ": no error";
}

void expect_clean(const std::vector<shm_harness::ChildResult>& results) {
  std::vector<int> pids;
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r);
    CHECK(results[r].report == "");
    CHECK(results[r].exit_code == 0);
    pids.push_back(results[r].pid);
  }
  CHECK(shm_harness::segments_of(pids) == std::vector<std::string>{});
}

// Rank `odd` makes a different call; every rank must get `mismatch`, and may free its buffers after.
template <class Call>
void mismatch_case(const char* what, Call call) {
  for (int ranks : {2, 3, 4, 5}) {
    INFO(what << ", " << ranks << " processes");
    expect_clean(shm_harness::run_processes(ranks, [&](chorus::bootstrap::Store& store, int rank, int size) {
      chorus::shm::Options options;
      options.timeout_ms = 10000;
      chorus::shm::Comm comm(store, rank, size, options);
      const bool odd = rank == size - 1;
      std::vector<std::string> failures;
      {
        std::vector<float> a(64, 1.0f), b(64, 0.0f);
        const std::string failure = expect_error(what, ErrorCode::mismatch, "", [&] { call(comm, odd, a, b); });
        if (!failure.empty()) failures.push_back(chorus::detail::concat("rank ", rank, ": ", failure));
      }  // buffers freed here: nothing of the failed call may touch them later
      const std::string after = expect_error("a call after the failure", ErrorCode::mismatch, "released because",
                                             [&] { comm.barrier(); });
      if (!after.empty()) failures.push_back(after);
      return failures;
    }));
  }
}

TEST_CASE("shm::Comm: mismatched counts, types, ops, roots and algorithms give mismatch on every rank") {
  mismatch_case("count", [](chorus::shm::Comm& c, bool odd, std::vector<float>& a, std::vector<float>& b) {
    c.all_reduce(a.data(), b.data(), odd ? 63 : 64, ReduceOp::sum);
  });
  mismatch_case("type", [](chorus::shm::Comm& c, bool odd, std::vector<float>& a, std::vector<float>& b) {
    c.all_reduce(a.data(), b.data(), 16, odd ? chorus::DataType::int32 : chorus::DataType::float32, ReduceOp::sum);
  });
  mismatch_case("op", [](chorus::shm::Comm& c, bool odd, std::vector<float>& a, std::vector<float>& b) {
    c.all_reduce(a.data(), b.data(), 64, odd ? ReduceOp::max : ReduceOp::sum);
  });
  mismatch_case("root", [](chorus::shm::Comm& c, bool odd, std::vector<float>& a, std::vector<float>& b) {
    c.broadcast(a.data(), b.data(), 64, odd ? 1 : 0);
  });
  mismatch_case("algorithm", [](chorus::shm::Comm& c, bool odd, std::vector<float>& a, std::vector<float>& b) {
    c.all_reduce(a.data(), b.data(), 64, ReduceOp::sum, odd ? Algorithm::one_shot : Algorithm::ring);
  });
  mismatch_case("collective", [](chorus::shm::Comm& c, bool odd, std::vector<float>& a, std::vector<float>& b) {
    if (odd) {
      c.barrier();
    } else {
      c.all_reduce(a.data(), b.data(), 64, ReduceOp::sum);
    }
  });
}

TEST_CASE("shm::Comm: a rank that never calls gives timeout on every rank that does, within the timeout") {
  expect_clean(shm_harness::run_processes(3, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.timeout_ms = 400;
    chorus::shm::Comm comm(store, rank, size, options);
    std::vector<std::string> failures;
    if (rank == 1) {  // stays alive without calling, past the others' timeout
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return failures;
    }
    std::vector<float> data(1000, 1.0f);
    const auto start = Clock::now();
    const std::string failure = expect_error("all_reduce without rank 1", ErrorCode::timeout, "rank 1",
                                             [&] { comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum); });
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (!failure.empty()) failures.push_back(failure);
    if (waited > 1200) failures.push_back(chorus::detail::concat("the timeout took ", waited, " ms (limit 400 ms)"));
    return failures;
  }));
}

TEST_CASE("shm::Comm: a rank killed with SIGKILL in a loop of 64 MiB all_reduces releases every survivor within 2 s") {
  const std::vector<shm_harness::ChildResult> results =
      shm_harness::run_processes(4, [](chorus::bootstrap::Store& store, int rank, int size) {
        chorus::shm::Options options;
        options.timeout_ms = 60000;
        chorus::shm::Comm comm(store, rank, size, options);
        std::vector<float> data(16u << 20, 1.0f);
        std::vector<std::string> failures;
        auto last = Clock::now();
        const std::string failure =
            expect_error("all_reduce loop", ErrorCode::peer_failed, "rank 2", [&] {
              for (int i = 0;; ++i) {
                if (rank == 2 && i == 3) ::raise(SIGKILL);
                comm.all_reduce(data.data(), data.data(), data.size(), ReduceOp::sum);
                last = Clock::now();
              }
            });
        const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last).count();
        if (!failure.empty()) failures.push_back(failure);
        // The last call took up to a few hundred ms of its own before the kill; 2 s is the bound for both.
        if (after > 2000) failures.push_back(chorus::detail::concat("released ", after, " ms after the last call"));
        return failures;
      });
  std::vector<int> pids;
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r);
    pids.push_back(results[r].pid);
    if (r == 2) {
      CHECK(results[r].exit_code == 128 + SIGKILL);
    } else {
      CHECK(results[r].report == "");
      CHECK(results[r].exit_code == 0);
    }
  }
  CHECK(shm_harness::segments_of(pids) == std::vector<std::string>{});
}

TEST_CASE("shm::Comm: every process killed once setup is done leaves nothing in /dev/shm") {
  const auto results = shm_harness::run_processes(3, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Comm comm(store, rank, size);
    ::raise(SIGKILL);
    return std::vector<std::string>{"survived SIGKILL"};
  });
  std::vector<int> pids;
  for (const auto& result : results) {
    CHECK(result.exit_code == 128 + SIGKILL);
    pids.push_back(result.pid);
  }
  CHECK(shm_harness::segments_of(pids) == std::vector<std::string>{});
}

TEST_CASE("shm::Comm: abort() releases every peer with peer_failed naming the rank") {
  expect_clean(shm_harness::run_processes(3, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.timeout_ms = 20000;
    chorus::shm::Comm comm(store, rank, size, options);
    std::vector<std::string> failures;
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      comm.abort();
    } else {
      std::vector<float> data(100, 1.0f);
      const auto start = Clock::now();
      const std::string failure = expect_error("all_reduce during abort", ErrorCode::peer_failed,
                                               "released because rank 0 failed",
                                               [&] { comm.all_reduce(data.data(), data.data(), 100, ReduceOp::sum); });
      if (!failure.empty()) failures.push_back(failure);
      if (Clock::now() - start > std::chrono::seconds(2)) failures.push_back("abort took over 2 s to release");
    }
    const std::string later = expect_error("barrier after abort", ErrorCode::peer_failed, "abort()",
                                           [&] { comm.barrier(); });
    if (!later.empty()) failures.push_back(later);
    return failures;
  }));
}

TEST_CASE("shm::Comm: interrupt() from another thread releases the rank's own call and every peer") {
  expect_clean(shm_harness::run_processes(3, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.timeout_ms = 20000;
    chorus::shm::Comm comm(store, rank, size, options);
    std::vector<std::string> failures;
    std::vector<float> data(100, 1.0f);
    // Rank 2 never calls, so ranks 0 and 1 wait; rank 0's second thread interrupts while its first waits.
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return failures;
    }
    std::thread interrupter;
    if (rank == 0) {
      interrupter = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        comm.interrupt("the framework aborted this group");
      });
    }
    const auto start = Clock::now();
    const std::string failure = expect_error("all_reduce while interrupted", ErrorCode::peer_failed,
                                             "the framework aborted this group",
                                             [&] { comm.all_reduce(data.data(), data.data(), 100, ReduceOp::sum); });
    if (interrupter.joinable()) interrupter.join();
    if (!failure.empty()) failures.push_back(failure);
    if (Clock::now() - start > std::chrono::seconds(2)) failures.push_back("interrupt took over 2 s to release");
    return failures;
  }));
}

TEST_CASE("shm::Comm: set_timeout_ms bounds later calls; a bad value is refused") {
  expect_clean(shm_harness::run_processes(2, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.timeout_ms = 20000;
    chorus::shm::Comm comm(store, rank, size, options);
    std::vector<std::string> failures;
    const std::string bad = expect_error("set_timeout_ms(-1)", ErrorCode::invalid_argument, "-1",
                                         [&] { comm.set_timeout_ms(-1); });
    if (!bad.empty()) failures.push_back(bad);
    if (comm.timeout_ms() != 20000) failures.push_back("a refused timeout changed the communicator's");
    comm.set_timeout_ms(300);
    if (comm.timeout_ms() != 300) failures.push_back("set_timeout_ms(300) did not take");
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1200));
      return failures;
    }
    std::vector<float> data(10, 1.0f);
    const auto start = Clock::now();
    const std::string failure = expect_error("all_reduce after set_timeout_ms(300)", ErrorCode::timeout, "300 ms",
                                             [&] { comm.all_reduce(data.data(), data.data(), 10, ReduceOp::sum); });
    if (!failure.empty()) failures.push_back(failure);
    if (Clock::now() - start > std::chrono::milliseconds(1000)) failures.push_back("the 300 ms timeout took over 1 s");
    return failures;
  }));
}

TEST_CASE("shm::Comm: a segment name left by a job killed during setup is never joined; a new job runs") {
  shm_harness::TempDir dir;
  // Job 1: its rank 0 publishes a segment and is killed before anyone joins (the name stays).
  const auto killed = shm_harness::run_processes_in(dir.path(), 1, [](chorus::bootstrap::Store& store, int, int) {
    chorus::shm::Options options;
    const auto segment = chorus::shm::detail::create_segment(2, options, "test", 0);
    store.set("chorus/shm/0", segment->name());
    ::raise(SIGKILL);
    return std::vector<std::string>{"survived SIGKILL"};
  });
  REQUIRE(killed[0].exit_code == 128 + SIGKILL);
  REQUIRE(shm_harness::segments_of({killed[0].pid}).size() == 1);
  // Job 2, same store: rank 1 may read the stale name first; it must not join it.
  const auto job = shm_harness::run_processes_in(dir.path(), 2, [](chorus::bootstrap::Store& store, int rank, int size) {
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let rank 1 see the stale name
    chorus::shm::Comm comm(store, rank, size);
    std::vector<std::int32_t> data{rank + 1}, sum{0};
    comm.all_reduce(data.data(), sum.data(), 1, ReduceOp::sum);
    return sum[0] == 3 ? std::vector<std::string>{} : std::vector<std::string>{"wrong sum"};
  });
  expect_clean(job);
  CHECK(shm_harness::segments_of({killed[0].pid}) == std::vector<std::string>{});  // the joiner cleaned it up
}

TEST_CASE("shm::Comm: processes started for different WORLD_SIZEs get a clear error, bounded") {
  expect_clean(shm_harness::run_processes(2, [](chorus::bootstrap::Store& store, int rank, int) {
    chorus::shm::Options options;
    options.timeout_ms = 500;
    std::vector<std::string> failures;
    const std::string failure =
        rank == 0 ? expect_error("rank 0 of 2", ErrorCode::timeout, "rank 1 never did",
                                 [&] { chorus::shm::Comm(store, 0, 2, options); })
                  : expect_error("rank 1 of 3", ErrorCode::invalid_argument, "WORLD_SIZE",
                                 [&] { chorus::shm::Comm(store, 1, 3, options); });
    if (!failure.empty()) failures.push_back(failure);
    return failures;
  }));
}

TEST_CASE("shm::Comm: send and recv of different sizes, or a recv meeting a collective, give mismatch on both") {
  expect_clean(shm_harness::run_processes(2, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.timeout_ms = 10000;
    std::vector<std::string> failures;
    {
      chorus::shm::Comm comm(store, rank, size, options);
      std::vector<std::int32_t> data(20, 7);
      const std::string failure =
          rank == 0 ? expect_error("send of 10", ErrorCode::mismatch, "", [&] { comm.send(data.data(), 10, 1); })
                    : expect_error("recv of 20", ErrorCode::mismatch, "rank 0 sent 40 bytes; this recv expects 80",
                                   [&] { comm.recv(data.data(), 20, 0); });
      if (!failure.empty()) failures.push_back(failure);
    }
    {
      chorus::shm::Options second = options;
      second.key = "second";
      chorus::shm::Comm comm(store, rank, size, second);
      std::vector<float> data(4, 1.0f);
      const std::string failure =
          rank == 0 ? expect_error("all_reduce against a recv", ErrorCode::mismatch, "",
                                   [&] { comm.all_reduce(data.data(), data.data(), 4, ReduceOp::sum); })
                    : expect_error("recv against an all_reduce", ErrorCode::mismatch, "",
                                   [&] { comm.recv(data.data(), 4, 0); });
      if (!failure.empty()) failures.push_back(failure);
    }
    return failures;
  }));
}

TEST_CASE("shm::Comm: a failure in a split communicator releases the ranks waiting in its parent") {
  expect_clean(shm_harness::run_processes(4, [](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.timeout_ms = 10000;
    chorus::shm::Comm comm(store, rank, size, options);
    chorus::shm::Comm part = comm.split(rank % 2, rank);
    std::vector<std::string> failures;
    const auto start = Clock::now();
    std::string failure;
    if (rank % 2 == 0) {  // ranks 0 and 2 disagree on a count in their own communicator
      std::vector<float> data(8, 1.0f);
      failure = expect_error("mismatched all_reduce in the split", ErrorCode::mismatch, "count",
                             [&] { part.all_reduce(data.data(), data.data(), rank == 0 ? 8 : 7, ReduceOp::sum); });
    } else {  // ranks 1 and 3 wait for them in the parent
      failure = expect_error("barrier in the parent", ErrorCode::mismatch, "released because rank",
                             [&] { comm.barrier(); });
    }
    if (!failure.empty()) failures.push_back(failure);
    if (Clock::now() - start > std::chrono::seconds(3)) failures.push_back("the release took over 3 s");
    return failures;
  }));
}

}  // namespace test_shm_faults
