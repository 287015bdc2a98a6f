// The twin is an asynchronous device: calls return before their kernels run, each stream runs its work in
// order, and the team orders its own work across streams, waits for it before freeing, can be aborted,
// refuses host waits during capture, and bounds its host wait from the kernel's start. Each case below is
// one of the stream-ordering defects a GPU would show, and fails without its fix.
#include <catch2/catch.hpp>

#include <chorus/cuda/twin/twin_team.hpp>

#include "support/sanitizers.hpp"
#include "support/scoped_env.hpp"
#include "support/twin_gate.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test_twin_streams {

using chorus::Algorithm;
using chorus::Collective;
using chorus::Error;
using chorus::ErrorCode;
using chorus::ReduceOp;
using chorus::cuda::TwinDevice;
using chorus::cuda::kernel::KernelAlgorithm;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Stream;
using chorus::cuda::twin::Team;
using Clock = std::chrono::steady_clock;

Options small(std::uint32_t seed = 0) {
  Options options;
  options.blocks = 2;
  options.threads = 2;
  options.delay_seed = seed;
  return options;
}

// Every rank's buffers for one call: inputs rank + i % 7, outputs -1.
struct Buffers {
  std::vector<std::vector<float>> in, out;
  std::vector<const float*> in_ptr;
  std::vector<float*> out_ptr;
  Buffers(int ranks, std::size_t in_count, std::size_t out_count) {
    for (int r = 0; r < ranks; ++r) {
      std::vector<float> values(in_count);
      for (std::size_t i = 0; i < in_count; ++i) values[i] = static_cast<float>(r + static_cast<int>(i % 7));
      in.push_back(values);
      out.emplace_back(out_count, -1.0f);
    }
    for (int r = 0; r < ranks; ++r) {
      in_ptr.push_back(in[static_cast<std::size_t>(r)].data());
      out_ptr.push_back(out[static_cast<std::size_t>(r)].data());
    }
  }
  // all_reduce sum: element i of every output.
  bool summed(int ranks) const {
    for (const auto& o : out) {
      for (std::size_t i = 0; i < o.size(); ++i) {
        float want = 0;
        for (int r = 0; r < ranks; ++r) want += static_cast<float>(r + static_cast<int>(i % 7));
        if (o[i] != want) return false;
      }
    }
    return true;
  }
  // all_gather: block r of every output is rank r's input.
  bool gathered(int ranks) const {
    const std::size_t count = in[0].size();
    for (const auto& o : out) {
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t i = 0; i < count; ++i) {
          if (o[static_cast<std::size_t>(r) * count + i] != in[static_cast<std::size_t>(r)][i]) return false;
        }
      }
    }
    return true;
  }
};

using support::Gate;  // a stream held busy until release(): work enqueued behind it has not run

TEST_CASE("a call returns before its kernel runs; the result is there after synchronize()") {
  Stream stream;
  Gate gate(stream);
  Team team(3, small());
  Buffers b(3, 100, 100);
  team.all_reduce(b.in_ptr, b.out_ptr, 100, ReduceOp::sum, Algorithm::ring, {&stream});
  CHECK(b.out[0][0] == -1.0f);  // the stream has not reached the kernel: nothing ran
  gate.release();
  team.synchronize();
  CHECK(b.summed(3));
}

TEST_CASE("two streams on one team: the team orders its own work, every result is right") {
  // Calls of different sizes and kernels alternate between two streams with no user synchronisation.
  // Without the team's order event they would run at once on the same barrier epochs, FIFO counters and
  // staging: wrong data, then kernel timeouts (bounded here at 5 s so a regression fails fast).
  const support::ScopedEnv bound("CHORUS_KERNEL_TIMEOUT_MS", "5000");
  const int n = 4;
  Stream first, second;
  Team team(n, small(chorus::test::kSanitized ? 0u : 17u));
  const int rounds = chorus::test::kSanitized ? 4 : 12;
  std::vector<std::unique_ptr<Buffers>> reduced, gathered;
  const KernelAlgorithm reduce_kernels[] = {KernelAlgorithm::ring, KernelAlgorithm::one_shot, KernelAlgorithm::two_shot,
                                            KernelAlgorithm::ll_one_shot, KernelAlgorithm::tree};
  for (int round = 0; round < rounds; ++round) {
    const std::size_t count = 300 + static_cast<std::size_t>(round) * 131;
    reduced.push_back(std::make_unique<Buffers>(n, count, count));
    team.all_reduce_with(reduced.back()->in_ptr, reduced.back()->out_ptr, count, ReduceOp::sum, reduce_kernels[round % 5], {&first});
    const std::size_t block = 40 + static_cast<std::size_t>(round) * 17;
    gathered.push_back(std::make_unique<Buffers>(n, block, block * n));
    team.all_gather(gathered.back()->in_ptr, gathered.back()->out_ptr, block, round % 2 ? Algorithm::ring : Algorithm::direct,
                    {&second});
  }
  team.synchronize();
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    CHECK(reduced[static_cast<std::size_t>(round)]->summed(n));
    CHECK(gathered[static_cast<std::size_t>(round)]->gathered(n));
  }
}

TEST_CASE("destroying a team with work in flight waits for it before freeing") {
  const long freed_before = TwinDevice::freed_while_running(0);
  Buffers b(3, 64, 64);
  {
    Stream stream;
    Team team(3, small());
    // The stream is busy for a moment, so the team's call is still queued when it is destroyed.
    stream.enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
    team.all_reduce(b.in_ptr, b.out_ptr, 64, ReduceOp::sum, Algorithm::one_shot, {&stream});
  }  // ~Team: waits for the call, then frees; then ~Stream
  CHECK(TwinDevice::freed_while_running(0) == freed_before);
  CHECK(b.summed(3));
}

TEST_CASE("a team on several devices is ready only when every device's setup has landed") {
  // Device 0's default stream is busy, so its memsets land late: the team must not return before they
  // have, or a call on streams of its own could read device 0's memory unset. (Two things make it wait:
  // the team synchronises every device, and each device's synchronous copy of the views waits for that
  // device's default stream; removing only one of them does not turn this red.)
  const auto start = Clock::now();
  TwinDevice(0).launch_host_func(nullptr, [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  Team team(std::vector<int>{0, 1, 2}, small());
  CHECK(Clock::now() - start >= std::chrono::milliseconds(250));
  Stream s0, s1, s2;
  Buffers b(3, 77, 77);
  team.all_reduce(b.in_ptr, b.out_ptr, 77, ReduceOp::sum, Algorithm::ring, {&s0, &s1, &s2});
  team.synchronize();
  CHECK(b.summed(3));
  CHECK_FALSE(team.is_virtual());
}

TEST_CASE("abort() releases kernels that wait for a rank that never comes, and the team refuses further calls") {
  const support::ScopedEnv bound("CHORUS_KERNEL_TIMEOUT_MS", "20000");  // abort must not wait for this
  Team team(3, small());
  Buffers b(3, 256, 256);
  team.all_reduce_with(b.in_ptr, b.out_ptr, 256, ReduceOp::sum, KernelAlgorithm::ring, {}, {true, false, true});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the kernels are spinning on rank 1
  const auto start = Clock::now();
  team.abort();
  ErrorCode code = ErrorCode::internal;
  std::string message;
  try {
    team.synchronize();
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  }
  INFO(message);
  CHECK(code == ErrorCode::peer_failed);
  CHECK(message.find("aborted") != std::string::npos);
  CHECK(Clock::now() - start < std::chrono::seconds(10));
  CHECK_THROWS_WITH(team.all_reduce(b.in_ptr, b.out_ptr, 256, ReduceOp::sum), Catch::Contains("the team was aborted"));
}

// Waits until `stream` has run everything enqueued so far (cudaStreamSynchronize).
void drain(Stream& stream) { REQUIRE(support::drained(stream)); }

TEST_CASE("an event may be destroyed while its record is still queued, as cudaEventDestroy allows") {
  Stream stream, other;
  Gate gate(stream);
  {
    chorus::cuda::twin::Event gone;
    stream.record(gone);  // queued behind the gate
    other.wait(gone, std::chrono::seconds(30));
  }  // destroyed here; the queued record and wait still reach its points
  gate.release();
  drain(stream);
  drain(other);
  CHECK(stream.failure() == nullptr);
  CHECK(other.failure() == nullptr);
}

TEST_CASE("the twin stream refuses what CUDA refuses around capture") {
  Stream stream, other;
  chorus::cuda::twin::Event eager, captured;
  other.record(eager);
  stream.begin_capture();
  CHECK_FALSE(stream.may_wait(eager));  // a dependency on work outside the capture
  CHECK_THROWS_WITH(stream.wait(eager, std::chrono::seconds(1)), Catch::Contains("cudaErrorStreamCaptureIsolation"));
  stream.record(captured);
  CHECK(stream.may_wait(captured));  // recorded in this capture: an edge of the graph
  (void)stream.end_capture();
  CHECK(stream.may_wait(eager));
  CHECK_FALSE(stream.may_wait(captured));  // last recorded in a capture: not usable outside it
  CHECK_THROWS_WITH(stream.wait(captured, std::chrono::seconds(1)), Catch::Contains("cudaErrorCapturedEvent"));
  const TwinDevice device(0);
  CHECK_THROWS_WITH(device.query(&captured, "test", 0), Catch::Contains("cudaErrorCapturedEvent"));
  stream.record(captured);  // an eager record makes it an ordinary event again
  CHECK(stream.may_wait(captured));
  drain(stream);
  CHECK(device.query(&captured, "test", 0));
}

// What a training loop does: eager calls, then the same calls captured into a graph and replayed. A
// captured launch may not wait on the team's eager order event (CUDA: cudaErrorStreamCaptureIsolation,
// the capture lost), so the first captured call waits for the eager work on the host; later captured
// calls follow each other inside the graph.
TEST_CASE("calls captured after eager calls on the same team: replays give the eager result") {
  // Buffers and stream before the team: on a failure the team's destructor waits for its kernels first.
  Buffers eager(4, 1000, 1000), captured(4, 777, 777), after(4, 33, 33);
  Stream stream;
  Team team(4, small(3));
  for (int call = 0; call < 3; ++call) team.all_reduce(eager.in_ptr, eager.out_ptr, 1000, ReduceOp::sum, Algorithm::ring);
  stream.begin_capture();
  for (int call = 0; call < 4; ++call) {
    team.all_reduce(captured.in_ptr, captured.out_ptr, 777, ReduceOp::sum, call % 2 == 0 ? Algorithm::ring : Algorithm::one_shot,
                    {&stream});
  }
  const chorus::cuda::twin::Graph graph = stream.end_capture();
  CHECK(captured.out[0][0] == -1.0f);
  for (int replay = 0; replay < 3; ++replay) stream.launch(graph);
  drain(stream);
  team.synchronize();
  CHECK(eager.summed(4));
  CHECK(captured.summed(4));
  // Eager calls after the graph's replays (ordered by the stream) still work.
  team.all_reduce(after.in_ptr, after.out_ptr, 33, ReduceOp::sum, Algorithm::one_shot, {&stream});
  team.synchronize();
  CHECK(after.summed(4));
}

TEST_CASE("a host wait during stream capture is refused and the team stays usable") {
  Stream stream;
  Team team(3, small());
  Buffers b(3, 50, 50);
  stream.begin_capture();
  team.all_reduce(b.in_ptr, b.out_ptr, 50, ReduceOp::sum, Algorithm::ring, {&stream});
  CHECK_THROWS_WITH(team.synchronize(), Catch::Contains("being captured into a graph"));
  const chorus::cuda::twin::Graph graph = stream.end_capture();
  CHECK(b.out[0][0] == -1.0f);  // captured, not run
  stream.launch(graph);  // the replay runs the call; its stream, not the team, is what waits for a graph
  drain(stream);
  team.synchronize();
  CHECK(b.summed(3));
  Buffers again(3, 20, 20);
  team.all_reduce(again.in_ptr, again.out_ptr, 20, ReduceOp::sum, Algorithm::one_shot, {&stream});
  team.synchronize();
  CHECK(again.summed(3));
  // A graph never launched leaves the team's order event as it was (its record is a node of the graph):
  // the next wait does not wait for it.
  const support::ScopedEnv bound("CHORUS_KERNEL_TIMEOUT_MS", "1000");
  Buffers dropped(3, 20, 20);
  stream.begin_capture();
  team.all_reduce(dropped.in_ptr, dropped.out_ptr, 20, ReduceOp::sum, Algorithm::one_shot, {&stream});
  (void)stream.end_capture();
  const auto start = Clock::now();
  CHECK_NOTHROW(team.synchronize());
  CHECK(Clock::now() - start < std::chrono::seconds(1));
  CHECK(dropped.out[0][0] == -1.0f);
}

TEST_CASE("the host's bound starts when the team's kernel starts, not when its wait does") {
  // Unrelated work holds the stream for longer than the host bound (kernel bound 1 s + 5 s grace); then the
  // team's kernel starts and waits for a rank that never comes. The wait must end with the kernel's own
  // record (who waited for whom), not a host timeout counted from the wait's start.
  const support::ScopedEnv bound("CHORUS_KERNEL_TIMEOUT_MS", "1000");
  Stream stream;
  Team team(2, small());
  Buffers b(2, 32, 32);
  stream.enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(5500)); });
  team.all_reduce_with(b.in_ptr, b.out_ptr, 32, ReduceOp::sum, KernelAlgorithm::one_shot, {&stream}, {true, false});
  std::string message;
  try {
    team.synchronize();
  } catch (const Error& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("waited 1000 ms for rank 1") != std::string::npos);
}

TEST_CASE("the kernels' bound is its own knob, ten minutes by default") {
  const support::ScopedEnv host("CHORUS_TIMEOUT_MS", "100");
  CHECK(chorus::env::kernel_timeout_ms() == 600000);
  const support::ScopedEnv kernel("CHORUS_KERNEL_TIMEOUT_MS", "2500");
  CHECK(chorus::env::kernel_timeout_ms() == 2500);
  const support::ScopedEnv bad("CHORUS_KERNEL_TIMEOUT_MS", "soon");
  CHECK_THROWS_WITH(chorus::env::kernel_timeout_ms(), Catch::Contains("CHORUS_KERNEL_TIMEOUT_MS must be"));
}

}  // namespace test_twin_streams
