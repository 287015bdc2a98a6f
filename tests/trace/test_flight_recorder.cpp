// The flight recorder on its own: what one entry holds as a call progresses, the ring keeping the
// last N calls, recording turned off, and snapshots taken while the owner keeps writing.
#include <catch2/catch.hpp>

#include <chorus/runtime/flight_recorder.hpp>

#include <atomic>
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
