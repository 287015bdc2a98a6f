// The flight recorder on its own: what one entry holds as a call progresses, the ring keeping the
// last N calls, recording turned off, and snapshots taken while the owner keeps writing.
#include <catch2/catch.hpp>

#include <chorus/runtime/flight_recorder.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace test_flight_recorder {

namespace {

using chorus::runtime::CallDescriptor;
using chorus::runtime::CallKind;
using chorus::runtime::CallRecord;
using chorus::runtime::CallState;
using chorus::runtime::FlightRecorder;

CallDescriptor all_reduce(std::size_t count) {
  CallDescriptor call;
  call.kind = CallKind::all_reduce;
  call.type = chorus::DataType::float32;
  call.count = count;
  call.op = chorus::ReduceOp::max;
  call.pattern = chorus::algo::Pattern::halving_doubling;
  call.in_place = true;
  return call;
}

}  // namespace

TEST_CASE("an entry follows its call from posted to done", "[flight_recorder]") {
  FlightRecorder recorder;
  CHECK(recorder.capacity() == FlightRecorder::kDefaultCapacity);
  CHECK(recorder.snapshot().empty());

  recorder.post(7, all_reduce(1019));
  std::vector<CallRecord> records = recorder.snapshot();
  REQUIRE(records.size() == 1);
  CHECK(records[0].sequence == 7);
  CHECK(records[0].state == CallState::posted);
  CHECK(records[0].call.kind == CallKind::all_reduce);
  CHECK(records[0].call.type == chorus::DataType::float32);
  CHECK(records[0].call.count == 1019);
  CHECK(records[0].call.op == chorus::ReduceOp::max);
  CHECK(records[0].call.pattern == chorus::algo::Pattern::halving_doubling);
  CHECK(records[0].call.in_place);
  CHECK(records[0].start_ns > 0);
  CHECK(records[0].end_ns == 0);
  CHECK(records[0].step == CallRecord::kNoStep);

  recorder.run(6);
  recorder.at_step(2, 3);
  records = recorder.snapshot();
  CHECK(records[0].state == CallState::running);
  CHECK(records[0].steps == 6);
  CHECK(records[0].step == 2);
  CHECK(records[0].peer == 3);
  CHECK(chorus::runtime::describe(records[0]) ==
        "call 7 all_reduce 1019 x float32 max halving_doubling in place: running, at step 2 of 6 (peer 3)");

  recorder.end(CallState::done);
  records = recorder.snapshot();
  CHECK(records[0].state == CallState::done);
  CHECK(records[0].end_ns >= records[0].start_ns);
  // After end() the entry is closed: progress reports for a call not posted go nowhere.
  recorder.at_step(5, 1);
  CHECK(recorder.snapshot()[0].step == 2);
}

TEST_CASE("a rooted call keeps its root beside its step count", "[flight_recorder]") {
  FlightRecorder recorder;
  CallDescriptor call;
  call.kind = CallKind::broadcast;
  call.type = chorus::DataType::int64;
  call.count = 3;
  call.root = 4095;
  recorder.post(1, call);
  recorder.run(12);
  const CallRecord record = recorder.snapshot().at(0);
  CHECK(record.call.root == 4095);
  CHECK(record.steps == 12);
  CHECK(chorus::runtime::describe(record.call) == "broadcast 3 x int64 root 4095 ring");
}

TEST_CASE("the ring keeps the last N calls, oldest first", "[flight_recorder]") {
  FlightRecorder recorder;
  recorder.set_capacity(4);
  for (std::uint64_t s = 1; s <= 10; ++s) {
    recorder.post(s, all_reduce(s * 10));
    recorder.run(1);
    recorder.end(s == 10 ? CallState::failed : CallState::done);
  }
  const std::vector<CallRecord> records = recorder.snapshot();
  REQUIRE(records.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(records[i].sequence == 7 + i);
    CHECK(records[i].call.count == (7 + i) * 10);
  }
  CHECK(records[3].state == CallState::failed);
  recorder.clear();
  CHECK(recorder.snapshot().empty());
}

TEST_CASE("capacity 0 records nothing", "[flight_recorder]") {
  FlightRecorder recorder;
  recorder.set_capacity(0);
  CHECK_FALSE(recorder.enabled());
  recorder.post(1, all_reduce(8));
  recorder.run(3);
  recorder.at_step(1, 1);
  recorder.end(CallState::done);
  CHECK(recorder.snapshot().empty());
}

namespace {

// Every field of a record against what the owner below wrote for its sequence number s: count 3s,
// root s % 97, s % 13 + 1 steps, each step's peer step + 100, ending done for odd s and failed for
// even. A snapshot mixing two versions of an entry (a torn read: two calls, or a state from one
// update with the times of another) breaks one of these; the reason is returned ("" when whole).
std::string broken(const CallRecord& r) {
  const std::uint64_t s = r.sequence;
  const auto steps = static_cast<std::int32_t>(s % 13 + 1);
  if (r.call.count != s * 3 || r.call.root != static_cast<int>(s % 97)) return "count or root of another call";
  if (r.start_ns <= 0) return "no start time";
  switch (r.state) {
    case CallState::posted:
      if (r.steps != 0 || r.step != CallRecord::kNoStep || r.end_ns != 0) return "posted with progress";
      return "";
    case CallState::running:
      if (r.steps != steps || r.end_ns != 0) return "running without its step count, or with an end";
      break;
    case CallState::done:
    case CallState::failed:
      if (r.state != (s % 2 == 1 ? CallState::done : CallState::failed)) return "ended in another call's state";
      if (r.end_ns < r.start_ns) return "ended before it started (end time 0?)";
      if (r.steps != steps || r.step != steps - 1) return "ended without its last step";
      break;
  }
  if (r.step != CallRecord::kNoStep && (r.step >= steps || r.peer != r.step + 100)) return "a step of another call";
  return "";
}

// The owner of `recorder`: calls with every kind of update (post, run, each step, end) until told to stop.
void write_calls(FlightRecorder& recorder, const std::atomic<bool>& stop, std::atomic<std::uint64_t>& calls) {
  CallDescriptor call = all_reduce(0);
  for (std::uint64_t s = 1; !stop.load(std::memory_order_relaxed); ++s) {
    call.count = s * 3;
    call.root = static_cast<int>(s % 97);
    recorder.post(s, call);
    const auto steps = static_cast<std::int32_t>(s % 13 + 1);
    recorder.run(steps);
    for (std::int32_t k = 0; k < steps; ++k) recorder.at_step(k, k + 100);
    recorder.end(s % 2 == 1 ? CallState::done : CallState::failed);
    calls.store(s, std::memory_order_relaxed);
  }
}

// Snapshots `recorder` for `duration` while write_calls runs; `check(snapshot, calls made before it)`
// returns what is wrong with one snapshot ("" when nothing). Returns the first problem found and the number of snapshots taken.
template <class Check>
std::pair<std::string, std::uint64_t> watch(FlightRecorder& recorder, std::chrono::milliseconds duration, Check&& check) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> calls{0};
  std::thread owner([&] { write_calls(recorder, stop, calls); });
  std::string problem;
  std::uint64_t snapshots = 0;
  const auto deadline = std::chrono::steady_clock::now() + duration;
  while (problem.empty() && (std::chrono::steady_clock::now() < deadline || calls.load() < 1000)) {
    const std::uint64_t made = calls.load();  // calls the owner had finished before this snapshot
    problem = check(recorder.snapshot(), made);
    ++snapshots;
  }
  stop.store(true);
  owner.join();
  return {problem, snapshots};
}

}  // namespace

// The seqlock's whole point: with its version re-check removed, or with an in-place update (run,
// at_step, end) made outside it, snapshots of an entry being rewritten show records no call ever had.
TEST_CASE("snapshots taken during every kind of update hold whole, consistent records", "[flight_recorder][threads]") {
  FlightRecorder recorder;
  recorder.set_capacity(1);  // every snapshot reads the one entry the owner keeps rewriting
  const auto result = watch(recorder, std::chrono::milliseconds(1000), [](const std::vector<CallRecord>& records, std::uint64_t) {
    for (const CallRecord& r : records) {
      const std::string why = broken(r);
      if (!why.empty()) return chorus::detail::concat("call ", r.sequence, ": ", why, " (", describe(r), ", start ",
                                                      r.start_ns, ", end ", r.end_ns, ")");
    }
    return std::string();
  });
  INFO(result.second << " snapshots");
  CHECK(result.first == "");
  CHECK(result.second > 100);
}

// A snapshot taken while the ring wraps: the owner overwrites the oldest entries as the reader goes.
// What comes back must still be a run of consecutive calls ending at one the owner made, never a newer
// call in an older one's slot (a rank would seem to have reached an earlier call than it had).
TEST_CASE("snapshots taken while the ring wraps are consecutive calls", "[flight_recorder][threads]") {
  FlightRecorder recorder;
  recorder.set_capacity(4);
  const auto result = watch(recorder, std::chrono::milliseconds(1000), [](const std::vector<CallRecord>& records, std::uint64_t made) {
    if (made == 0) return std::string();
    if (records.empty()) return std::string("an empty snapshot of a recorder that has calls");
    if (records.back().sequence < made) {
      return chorus::detail::concat("the newest call is ", records.back().sequence, ", ", made, " were made before");
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
      const std::string why = broken(records[i]);
      if (!why.empty()) return chorus::detail::concat("call ", records[i].sequence, ": ", why);
      if (i > 0 && records[i].sequence != records[i - 1].sequence + 1) {
        return chorus::detail::concat("call ", records[i].sequence, " follows call ", records[i - 1].sequence);
      }
    }
    return std::string();
  });
  INFO(result.second << " snapshots");
  CHECK(result.first == "");
  CHECK(result.second > 100);
}

// A reader never sees an entry mixing two calls: each call's count and root are functions of its
// sequence number, so a torn read shows as a record that breaks the relation. One entry, so every
// snapshot reads the entry the owner is rewriting.
TEST_CASE("snapshots taken while the owner writes hold whole records", "[flight_recorder][threads]") {
  FlightRecorder recorder;
  recorder.set_capacity(1);
  constexpr std::uint64_t kCalls = 1000000;
  std::atomic<bool> done{false};
  std::thread owner([&] {
    CallDescriptor call = all_reduce(0);
    for (std::uint64_t s = 1; s <= kCalls; ++s) {
      call.count = s * 3;
      call.root = static_cast<int>(s % 97);
      recorder.post(s, call);
      recorder.run(static_cast<std::int32_t>(s % 13));
      recorder.end(CallState::done);
    }
    done.store(true);
  });
  std::uint64_t snapshots = 0;
  std::uint64_t torn = 0;
  while (!done.load() || snapshots == 0) {
    const std::vector<CallRecord> records = recorder.snapshot();
    for (const CallRecord& r : records) {
      if (r.call.count != r.sequence * 3 || r.call.root != static_cast<int>(r.sequence % 97)) ++torn;
    }
    ++snapshots;
  }
  owner.join();
  INFO(snapshots << " snapshots");
  CHECK(torn == 0);
  const std::vector<CallRecord> last = recorder.snapshot();
  REQUIRE(last.size() == 1);
  CHECK(last.back().sequence == kCalls);
}

}  // namespace test_flight_recorder
