// chorus-recorder-cost: what the flight recorder adds to one call, measured alone on one thread:
// post, run, one at_step per schedule step and end, as host::Comm does for a 12-step call (a ring
// all_reduce on 4 ranks), against the same loop with recording off (capacity 0). Best of 7 runs of
// 1M calls each, in nanoseconds per call; docs/benchmarks.md compares it with a call's latency.
#include <chorus/runtime/flight_recorder.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {

double ns_per_call(std::size_t capacity, std::uint64_t calls) {
  chorus::runtime::FlightRecorder recorder;
  recorder.set_capacity(capacity);
  chorus::runtime::CallDescriptor call;
  call.kind = chorus::runtime::CallKind::all_reduce;
  call.type = chorus::DataType::float32;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t s = 1; s <= calls; ++s) {
    call.count = s;  // keeps the loop from being hoisted
    recorder.post(s, call);
    recorder.run(12);
    for (std::int32_t step = 0; step < 12; ++step) recorder.at_step(step, step % 4);
    recorder.at_step(12, -1);
    recorder.end(chorus::runtime::CallState::done);
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / static_cast<double>(calls);
}

}  // namespace

int main() {
  constexpr std::uint64_t kCalls = 1000000;
  double on = 1e30;
  double off = 1e30;
  for (int run = 0; run < 7; ++run) {
    on = std::min(on, ns_per_call(chorus::runtime::FlightRecorder::kDefaultCapacity, kCalls));
    off = std::min(off, ns_per_call(0, kCalls));
  }
  std::printf("flight recorder, 12-step call: %.1f ns per call recording (capacity %zu), %.1f ns off\n", on,
              chorus::runtime::FlightRecorder::kDefaultCapacity, off);
  return 0;
}
