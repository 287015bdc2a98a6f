// The bounded wait's decisions (include/chorus/nccl/progress.hpp) against a scripted probe: done at
// once, in progress then done, an asynchronous error, a failing stream, and a timeout. Each failure
// aborts the communicator exactly once, and the error names the call and what was awaited.
#include <catch2/catch.hpp>

#include <chorus/nccl/progress.hpp>

#include <chrono>
#include <string>

using chorus::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {
struct ScriptedProbe {
  int busy_polls = 0;          // async_error says ncclInProgress this many times
  int stream_busy_polls = 0;   // stream_done says false this many times
  ncclResult_t error = ncclSuccess;
  int error_after = 0;         // polls before `error` shows
  bool stream_fails = false;
  bool never_done = false;
  int reach_busy_polls = 0;    // reached says false this many times (wait_for_work)
  bool never_reached = false;
  bool reach_fails = false;
  int polls = 0, stream_queries = 0, reach_queries = 0, aborts = 0;

  bool reached() {
    ++reach_queries;
    if (reach_fails) throw chorus::Error(ErrorCode::internal, "event query failed: illegal address");
    if (never_reached) return false;
    if (reach_busy_polls > 0) {
      --reach_busy_polls;
      return false;
    }
    return true;
  }

  ncclResult_t async_error() {
    ++polls;
    if (error != ncclSuccess && polls > error_after) return error;
    if (busy_polls > 0) {
      --busy_polls;
      return ncclInProgress;
    }
    return ncclSuccess;
  }
  bool stream_done() {
    ++stream_queries;
    if (stream_fails) throw chorus::Error(ErrorCode::internal, "stream failed: illegal address");
    if (never_done) return false;
    if (stream_busy_polls > 0) {
      --stream_busy_polls;
      return false;
    }
    return true;
  }
  std::string last_error() { return "peer 3 closed the connection"; }
  void abort() { ++aborts; }
};

void wait(ScriptedProbe& probe, long timeout_ms = 10000) {
  chorus::nccl::wait_for_nccl(probe, "all_reduce", chorus::RankName(1), "stream 0x1 to finish all_reduce (call 4)", timeout_ms);
}

void wait_for_work(ScriptedProbe& probe, long timeout_ms, long queue_timeout_ms) {
  chorus::nccl::wait_for_work(probe, "wait", chorus::RankName(1), "stream 0x1 to reach all_reduce (call 4)",
                              "stream 0x1 to finish all_reduce (call 4)", timeout_ms, queue_timeout_ms);
}
}  // namespace

TEST_CASE("a finished stream and an idle communicator end the wait at once", "[nccl][progress]") {
  ScriptedProbe probe;
  wait(probe);
  CHECK(probe.polls == 1);
  CHECK(probe.stream_queries == 1);
  CHECK(probe.aborts == 0);
}

TEST_CASE("in progress, then done: the wait polls until NCCL and the stream are both finished", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.busy_polls = 40;  // past the spin phase, into yields
  probe.stream_busy_polls = 25;
  wait(probe);
  CHECK(probe.busy_polls == 0);
  CHECK(probe.stream_busy_polls == 0);
  CHECK(probe.polls == 40 + 25 + 1);  // the stream is only asked once NCCL is no longer in progress
  CHECK(probe.aborts == 0);
}

TEST_CASE("an asynchronous error aborts once and names the call, the rank and NCCL's words", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.never_done = true;
  probe.error = ncclRemoteError;
  probe.error_after = 30;
  try {
    wait(probe);
    FAIL("the asynchronous error must end the wait");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::peer_failed);
    const std::string what = e.what();
    CHECK(what.find("chorus::all_reduce on rank 1") == 0);
    CHECK(what.find("ncclCommGetAsyncError failed") != std::string::npos);
    CHECK(what.find("(ncclRemoteError): peer 3 closed the connection") != std::string::npos);
    CHECK(what.find("while waiting for stream 0x1 to finish all_reduce (call 4)") != std::string::npos);
    CHECK(what.find("aborted") != std::string::npos);
  }
  CHECK(probe.aborts == 1);
  CHECK(probe.polls == 31);
}

TEST_CASE("a failing stream aborts the communicator and passes CUDA's error on", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.stream_fails = true;
  CHECK_THROWS_WITH(wait(probe), "stream failed: illegal address");
  CHECK(probe.aborts == 1);
}

TEST_CASE("a wait that runs past the timeout aborts once and says what it waited for", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.never_done = true;
  const auto start = Clock::now();
  try {
    wait(probe, 150);
    FAIL("the wait must time out");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    const std::string what = e.what();
    CHECK(what.find("chorus::all_reduce on rank 1: waited 150 ms (CHORUS_TIMEOUT_MS)") == 0);
    CHECK(what.find("stream 0x1 to finish all_reduce (call 4)") != std::string::npos);
    CHECK(what.find("ncclCommAbort") != std::string::npos);
  }
  const auto elapsed = Clock::now() - start;
  CHECK(elapsed >= std::chrono::milliseconds(150));
  CHECK(elapsed < std::chrono::milliseconds(3000));
  CHECK(probe.aborts == 1);
}

TEST_CASE("a nonblocking operation that stays in progress times out too", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.busy_polls = 1 << 30;
  CHECK_THROWS_AS(wait(probe, 100), chorus::Error);
  CHECK(probe.aborts == 1);
  CHECK(probe.stream_queries == 0);  // never asked: NCCL was still busy
}

// wait_for_work: the view's wait, in two phases (until the stream reaches the work, then until it is done).

TEST_CASE("wait_for_work asks for the end only once the stream has reached the work", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.reach_busy_polls = 30;
  probe.stream_busy_polls = 10;
  wait_for_work(probe, 10000, 10000);
  CHECK(probe.reach_queries == 31);
  CHECK(probe.stream_queries == 11);
  CHECK(probe.aborts == 0);
}

TEST_CASE("work ahead that never lets the stream reach the work: the queue bound throws and does not abort",
          "[nccl][progress]") {
  ScriptedProbe probe;
  probe.never_reached = true;
  const auto start = Clock::now();
  try {
    wait_for_work(probe, 50, 200);  // the shorter CHORUS_TIMEOUT_MS does not apply before the work is reached
    FAIL("must time out");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK_THAT(e.what(), Catch::StartsWith("chorus::wait on rank 1: waited 200 ms (CHORUS_KERNEL_TIMEOUT_MS) for "
                                           "stream 0x1 to reach all_reduce (call 4)") &&
                             Catch::Contains("not aborted"));
  }
  CHECK(Clock::now() - start >= std::chrono::milliseconds(200));
  CHECK(probe.aborts == 0);
  CHECK(probe.stream_queries == 0);
}

TEST_CASE("once the work is reached, CHORUS_TIMEOUT_MS bounds it and aborts", "[nccl][progress]") {
  ScriptedProbe probe;
  probe.reach_busy_polls = 40;
  probe.never_done = true;
  try {
    wait_for_work(probe, 100, 100000);
    FAIL("must time out");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK_THAT(e.what(), Catch::Contains("waited 100 ms (CHORUS_TIMEOUT_MS) for stream 0x1 to finish all_reduce (call 4)"));
  }
  CHECK(probe.aborts == 1);
}

TEST_CASE("before the work is reached, a peer's failure or a failing stream still aborts", "[nccl][progress]") {
  SECTION("asynchronous error") {
    ScriptedProbe probe;
    probe.never_reached = true;
    probe.error = ncclRemoteError;
    probe.error_after = 20;
    CHECK_THROWS_WITH(wait_for_work(probe, 10000, 10000),
                      Catch::Contains("(ncclRemoteError)") && Catch::Contains("while waiting for stream 0x1 to reach"));
    CHECK(probe.aborts == 1);
  }
  SECTION("stream error") {
    ScriptedProbe probe;
    probe.reach_fails = true;
    CHECK_THROWS_WITH(wait_for_work(probe, 10000, 10000), "event query failed: illegal address");
    CHECK(probe.aborts == 1);
  }
}
