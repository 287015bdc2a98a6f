// What a view's wait() waits for, and the CUDA objects behind it, over the scripted fake of NCCL and
// CUDA (fake_library.hpp), whose streams run on the wall clock: wait() waits for this communicator's own
// work only (two events per communicator, re-recorded), times CHORUS_TIMEOUT_MS from when the stream
// reaches that work and never aborts for work queued ahead of it (CHORUS_KERNEL_TIMEOUT_MS); a wait
// during stream capture is refused and leaves the communicator healthy; barrier's int is made once per
// communicator; the device is switched (and restored) only when it is not current already; a group's
// scratch is freed only once its members are settled. Each test goes red with the code it checks undone.
#include <catch2/catch.hpp>

#include <chorus/nccl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "fake_library.hpp"
#include "support/scoped_env.hpp"

namespace test_nccl_wait {

using chorus::ErrorCode;
using chorus::ReduceOp;
using Comm = chorus::nccl::BasicComm<fake::Library>;
using Group = chorus::nccl::BasicGroup<fake::Library>;
using Clock = std::chrono::steady_clock;
using Names = std::vector<std::string>;
using support::ScopedEnv;

namespace {
cudaStream_t stream_a() { return reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5a}); }
cudaStream_t stream_b() { return reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5b}); }

// A communicator of `size` ranks on which this is `rank`, the creation calls cleared from the log. It
// resets the fake, whose communicators die with it: at most one made() per test case.
Comm made(int rank, int size, fake::Script script = fake::Script()) {
  fake::reset(script);
  Comm comm = Comm::init_rank(size, Comm::unique_id(), rank);
  fake::clear_calls();
  return comm;
}

long elapsed_ms(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
}

// Position of the n-th (from 0) call named `function` in the log, or -1.
long index_of(const std::string& function, int n = 0) {
  const std::vector<fake::Call> calls = fake::calls();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].function == function && n-- == 0) return static_cast<long>(i);
  }
  return -1;
}

std::vector<fake::Call> calls_named(const std::string& function) {
  std::vector<fake::Call> out;
  for (const fake::Call& c : fake::calls()) {
    if (c.function == function) out.push_back(c);
  }
  return out;
}
}  // namespace

// ---- wait() waits for this communicator's work, timed from when the stream reaches it ----

TEST_CASE("wait does not count the caller's work queued ahead of this communicator's call", "[nccl][wait]") {
  ScopedEnv timeout("CHORUS_TIMEOUT_MS", "200");
  Comm comm = made(1, 2);
  std::vector<float> a(4);
  fake::queue_work(stream_a(), 700);  // the caller's compute, longer than the timeout
  comm.on(stream_a()).all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  const Clock::time_point start = Clock::now();
  comm.on(stream_a()).wait();  // the old wait timed the whole stream: 200 ms, then ncclCommAbort
  CHECK(elapsed_ms(start) >= 600);
  CHECK(fake::count("ncclCommAbort") == 0);
  CHECK(fake::count("cudaStreamQuery") == 0);  // events, not the stream
}

TEST_CASE("wait does not wait for the caller's work queued after this communicator's call", "[nccl][wait]") {
  ScopedEnv timeout("CHORUS_TIMEOUT_MS", "300");
  Comm comm = made(0, 2);
  std::vector<float> a(4);
  auto view = comm.on(stream_a());
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  fake::queue_work(stream_a(), -1);  // never ends
  const Clock::time_point start = Clock::now();
  view.wait();
  CHECK(elapsed_ms(start) < 250);
  CHECK(fake::count("ncclCommAbort") == 0);
}

TEST_CASE("this communicator's hung call times out CHORUS_TIMEOUT_MS after the stream reached it, and aborts",
          "[nccl][wait]") {
  ScopedEnv timeout("CHORUS_TIMEOUT_MS", "200");
  fake::Script script;
  script.kernels_hang = true;
  Comm comm = made(1, 2, script);
  std::vector<float> a(4);
  fake::queue_work(stream_a(), 500);
  comm.on(stream_a()).all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  const Clock::time_point start = Clock::now();
  try {
    comm.on(stream_a()).wait();
    FAIL("must time out");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK_THAT(e.what(), Catch::StartsWith("chorus::wait on rank 1: waited 200 ms (CHORUS_TIMEOUT_MS) for stream 0x5a "
                                           "to finish all_reduce (call 1 on this communicator)") &&
                             Catch::Contains("ncclCommAbort"));
  }
  const long waited = elapsed_ms(start);
  CHECK(waited >= 650);  // 500 ms of the caller's work, then the 200 ms bound
  CHECK(waited < 5000);
  CHECK(fake::count("ncclCommAbort") == 1);
  CHECK_THROWS_WITH(comm.on(stream_a()).barrier(), Catch::Contains("aborted earlier"));
}

TEST_CASE("the bound starts at this communicator's oldest unfinished call: its own hung call is not queued work",
          "[nccl][wait]") {
  // A rank mismatch hangs an early call; the caller queues more work and another call, then waits. The
  // hang is this communicator's, so CHORUS_TIMEOUT_MS catches it, not the ten-minute queue bound.
  ScopedEnv timeout("CHORUS_TIMEOUT_MS", "150");
  ScopedEnv queue("CHORUS_KERNEL_TIMEOUT_MS", "60000");
  fake::Script script;
  script.kernels_hang = true;
  Comm comm = made(0, 2, script);
  std::vector<float> a(4);
  auto view = comm.on(stream_a());
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  fake::queue_work(stream_a(), 100);
  view.broadcast(a.data(), a.data(), 4, 0);
  const Clock::time_point start = Clock::now();
  try {
    view.wait();
    FAIL("must time out");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK_THAT(e.what(), Catch::Contains("(CHORUS_TIMEOUT_MS) for stream 0x5a to finish broadcast (call 2 on this "
                                         "communicator), timed from when all_reduce (call 1) could start"));
  }
  CHECK(elapsed_ms(start) < 5000);
  CHECK(fake::count("ncclCommAbort") == 1);
}

TEST_CASE("work ahead that keeps the stream from this communicator's call: CHORUS_KERNEL_TIMEOUT_MS, no abort",
          "[nccl][wait]") {
  ScopedEnv timeout("CHORUS_TIMEOUT_MS", "100");
  ScopedEnv queue("CHORUS_KERNEL_TIMEOUT_MS", "250");
  Comm comm = made(1, 2);
  std::vector<float> a(4);
  auto view = comm.on(stream_a());
  fake::queue_work(stream_a(), -1);  // the caller's kernel never ends
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  const Clock::time_point start = Clock::now();
  try {
    view.wait();
    FAIL("must time out");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::timeout);
    CHECK_THAT(e.what(), Catch::StartsWith("chorus::wait on rank 1: waited 250 ms (CHORUS_KERNEL_TIMEOUT_MS) for "
                                           "stream 0x5a to reach all_reduce (call 1 on this communicator)") &&
                             Catch::Contains("not this communicator's") && Catch::Contains("not aborted"));
  }
  CHECK(elapsed_ms(start) >= 240);
  CHECK(fake::count("ncclCommAbort") == 0);
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);  // still usable
  CHECK(fake::count("ncclAllReduce") == 2);
}

TEST_CASE("a failing event query (the context failed) aborts and passes CUDA's error on", "[nccl][wait]") {
  fake::Script script;
  script.event_result = cudaErrorIllegalAddress;
  Comm comm = made(1, 2, script);
  std::vector<float> a(4);
  comm.on(stream_a()).all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  try {
    comm.on(stream_a()).wait();
    FAIL("must throw");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::internal);
    CHECK_THAT(e.what(), Catch::StartsWith("chorus::wait on rank 1: cudaEventQuery failed: ") &&
                             Catch::Contains("(cudaErrorIllegalAddress)"));
  }
  CHECK(fake::count("ncclCommAbort") == 1);
}

TEST_CASE("CHORUS_KERNEL_TIMEOUT_MS is checked like CHORUS_TIMEOUT_MS", "[nccl][wait]") {
  CHECK(chorus::nccl::queue_timeout_ms() == chorus::kDefaultKernelTimeoutMs);
  ScopedEnv queue("CHORUS_KERNEL_TIMEOUT_MS", "10s");
  CHECK_THROWS_WITH(chorus::nccl::queue_timeout_ms(), Catch::Contains("CHORUS_KERNEL_TIMEOUT_MS must be a positive integer"));
}

TEST_CASE("two events per communicator, made once, re-recorded around its calls, destroyed with it", "[nccl][wait]") {
  fake::Script script;
  script.kernel_ms = 0;
  {
    Comm comm = made(0, 2, script);
    std::vector<float> a(8);
    comm.on(stream_a()).all_reduce(a.data(), a.data(), 8, ReduceOp::sum);
    comm.on(stream_b()).all_gather(a.data(), a.data(), 4);
    comm.on(stream_a()).barrier();
    CHECK(fake::count("cudaEventCreate") == 2);
    CHECK(fake::live_events() == 2);
    const std::vector<fake::Call> creates = calls_named("cudaEventCreate");
    const cudaEvent_t start_event = creates[0].event;
    const cudaEvent_t done_event = creates[1].event;
    // Each call: the capture check, `start` before its NCCL work (the communicator was idle), `done` after it.
    const std::vector<fake::Call> calls = fake::calls();
    Names seen;
    for (const fake::Call& c : calls) {
      if (c.function == "cudaEventRecord") {
        seen.push_back(c.event == start_event ? "start" : c.event == done_event ? "done" : "?");
      } else if (c.function.rfind("nccl", 0) == 0 && c.function != "ncclGetVersion") {
        seen.push_back(c.function);
      }
    }
    CHECK(seen == Names{"start", "ncclAllReduce", "done", "start", "ncclAllGather", "done", "start", "ncclAllReduce", "done"});
    const std::vector<fake::Call> records = calls_named("cudaEventRecord");
    CHECK(records[2].stream == stream_b());
    CHECK(records[3].stream == stream_b());

    // While the communicator's earlier work is unfinished, `start` stays where it was.
    fake::clear_calls();
    fake::state().script.kernel_ms = 5000;
    comm.on(stream_a()).all_reduce(a.data(), a.data(), 8, ReduceOp::sum);
    comm.on(stream_a()).all_reduce(a.data(), a.data(), 8, ReduceOp::sum);
    const std::vector<fake::Call> busy = calls_named("cudaEventRecord");
    REQUIRE(busy.size() == 3);
    CHECK(busy[0].event == start_event);
    CHECK(busy[1].event == done_event);
    CHECK(busy[2].event == done_event);
    fake::state().script.kernel_ms = 0;
    comm.abort();  // the destructor does not wait for the five-second kernels
  }
  CHECK(fake::live_events() == 0);
  CHECK(fake::count("cudaEventDestroy") == 2);
}

TEST_CASE("in a Group, the end of a communicator's calls is marked after ncclGroupEnd launched them", "[nccl][wait]") {
  fake::reset();
  std::vector<Comm> comms = Comm::init_all({0, 1});
  fake::clear_calls();
  std::vector<float> a(8), b(8);
  {
    Group group;
    comms[0].on(stream_a()).all_reduce(a.data(), a.data(), 8, ReduceOp::sum);
    comms[1].on(stream_b()).all_reduce(b.data(), b.data(), 8, ReduceOp::sum);
    // The group's work is not launched yet: waiting for it could only time out.
    CHECK_THROWS_WITH(comms[0].on(stream_a()).wait(),
                      Catch::Contains("called inside an open nccl::Group") && Catch::Contains("all_reduce, call 1"));
    CHECK(fake::count("cudaEventRecord") == 2);  // the two starts
    group.end();
  }
  const long end = index_of("ncclGroupEnd");
  REQUIRE(end >= 0);
  CHECK(index_of("cudaEventRecord", 2) > end);
  CHECK(index_of("cudaEventRecord", 3) > end);
  CHECK(calls_named("cudaEventRecord")[3].stream == stream_b());
  comms[0].on(stream_a()).wait();
  comms[1].on(stream_b()).wait();
  CHECK(fake::count("ncclCommAbort") == 0);
}

// ---- stream capture ----

TEST_CASE("wait during stream capture is refused, and the communicator stays healthy", "[nccl][wait][capture]") {
  Comm comm = made(1, 2);
  std::vector<float> a(4);
  auto view = comm.on(stream_a());
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  fake::set_capturing(stream_a(), true);
  for (int attempt = 0; attempt < 2; ++attempt) {  // View::wait, then Comm::wait
    try {
      if (attempt == 0) {
        view.wait();
      } else {
        comm.wait(stream_a());
      }
      FAIL("must be refused");
    } catch (const chorus::Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::StartsWith("chorus::wait on rank 1: stream 0x5a is being captured into a CUDA graph") &&
                               Catch::Contains("the communicator is unchanged"));
    }
  }
  CHECK(fake::count("ncclCommAbort") == 0);
  CHECK(fake::count("cudaStreamQuery") == 0);  // querying a capturing stream would invalidate the capture
  CHECK(fake::count("cudaEventQuery") == 0);
  fake::set_capturing(stream_a(), false);
  view.wait();
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  CHECK(fake::count("ncclAllReduce") == 2);
}

TEST_CASE("calls during a capture reach NCCL and mark nothing; the first barrier's int is made outside the capture's rules",
          "[nccl][wait][capture]") {
  Comm comm = made(0, 2);
  std::vector<float> a(4);
  auto view = comm.on(stream_a());
  fake::set_capturing(stream_a(), true);
  view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  CHECK(fake::count("cudaEventRecord") == 0);  // an event recorded in a capture is a graph node
  view.barrier();  // cudaMalloc is refused in a global-mode capture; chorus's relaxes this thread around it
  CHECK(fake::count("ncclAllReduce") == 2);
  CHECK(fake::count("cudaEventRecord") == 0);
  const std::vector<fake::Call> mallocs = calls_named("cudaMalloc");
  REQUIRE(mallocs.size() == 1);
  CHECK(mallocs[0].recv != nullptr);
  CHECK(mallocs[0].root_or_peer == static_cast<int>(cudaStreamCaptureModeRelaxed));
  CHECK(fake::capture_mode() == cudaStreamCaptureModeGlobal);  // the thread's mode, restored
  fake::set_capturing(stream_a(), false);
  view.wait();  // nothing of this communicator's outside the graph
  CHECK(fake::count("ncclCommAbort") == 0);
}

// ---- barrier's int ----

TEST_CASE("barrier's int is made once per communicator, on any stream, and freed with it", "[nccl][barrier]") {
  {
    Comm comm = made(0, 2);
    comm.on(stream_a()).barrier();
    comm.on(stream_b()).barrier();
    comm.on(stream_a()).barrier();
    CHECK(fake::count("cudaMalloc") == 1);
    CHECK(fake::count("cudaMemsetAsync") == 1);
    CHECK(fake::count("cudaMallocAsync") == 0);
    CHECK(fake::count("cudaFreeAsync") == 0);
    const std::vector<fake::Call> reduces = calls_named("ncclAllReduce");
    REQUIRE(reduces.size() == 3);
    REQUIRE(fake::count("cudaMalloc") == 1);
    const void* flag = calls_named("cudaMalloc")[0].recv;
    for (const fake::Call& c : reduces) {
      CHECK(c.send == flag);
      CHECK(c.recv == flag);
      CHECK(c.count == 1);
      CHECK(c.type == ncclInt32);
    }
    CHECK(reduces[1].stream == stream_b());
    CHECK(fake::count("cudaFree") == 0);
  }
  // Freed after the communicator is finalized and destroyed: none of its kernels reads it any more.
  CHECK(fake::work_names() == Names{"cudaMalloc", "cudaMemsetAsync", "ncclAllReduce", "ncclAllReduce", "ncclAllReduce",
                                    "ncclCommFinalize", "ncclCommDestroy", "cudaFree"});
  CHECK(calls_named("cudaFree")[0].send == calls_named("cudaMalloc")[0].recv);
}

TEST_CASE("an aborted communicator still frees its int and its events", "[nccl][barrier]") {
  {
    Comm comm = made(0, 2);
    comm.on(stream_a()).barrier();
    comm.abort();
  }
  CHECK(fake::count("cudaFree") == 1);
  CHECK(fake::live_events() == 0);
}

// ---- the device ----

TEST_CASE("a communicator on the caller's device never switches devices", "[nccl][device]") {
  fake::reset();
  fake::current_device() = 0;
  {
    std::vector<Comm> comms = Comm::init_all({0});  // the old init_all "restored" device 0 regardless
    std::vector<float> a(4);
    auto view = comms[0].on(stream_a());
    view.all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
    view.all_to_all(a.data(), a.data(), 4);  // in place: scratch
    view.barrier();
    view.wait();
  }
  CHECK(fake::count("cudaSetDevice") == 0);
}

TEST_CASE("a communicator on another device switches there and back once per call", "[nccl][device]") {
  fake::reset();
  fake::current_device() = 0;
  {
    std::vector<Comm> comms = Comm::init_all({1});
    CHECK(fake::count("cudaSetDevice") == 2);
    CHECK(fake::current_device() == 0);
    fake::clear_calls();
    comms[0].on(stream_a()).barrier();
    const std::vector<fake::Call> sets = calls_named("cudaSetDevice");
    REQUIRE(sets.size() == 2);
    CHECK(sets[0].root_or_peer == 1);
    CHECK(sets[1].root_or_peer == 0);
    CHECK(index_of("cudaMalloc") > index_of("cudaSetDevice", 0));  // made on device 1
    CHECK(index_of("cudaMalloc") < index_of("cudaSetDevice", 1));
    CHECK(fake::current_device() == 0);
  }
  CHECK(fake::current_device() == 0);
}

// ---- a group's scratch ----

TEST_CASE("when ncclGroupEnd is in progress, the group's scratch is freed only after its members are settled",
          "[nccl][group]") {
  fake::Script script;
  script.group_end_result = ncclInProgress;
  fake::reset(script);
  std::vector<Comm> comms = Comm::init_all({0, 1});
  std::vector<float> a(8);
  int polls_before_end = 0;
  {
    Group group;
    comms[0].on(stream_a()).all_to_all(a.data(), a.data(), 4);  // in place: scratch, freed at the group's end
    {
      std::lock_guard<std::mutex> lock(fake::state().mutex);
      for (auto& c : fake::state().comms) c->busy_polls = 6;  // as if NCCL still enqueues the group's work
      polls_before_end = fake::state().async_polls;
    }
    group.end();
  }
  const std::vector<fake::Call> frees = calls_named("cudaFreeAsync");
  REQUIRE(frees.size() == 1);
  CHECK(frees[0].async_polls >= polls_before_end + 7);  // comms[0] settled (6 in progress, then done) first
}

}  // namespace test_nccl_wait
