// DeviceGradientReducer (parallel/device_gradient_reducer.hpp) on the CPU twin device, one thread per rank:
// averaged gradients of every floating type and awkward sizes, fp16/bf16 compression, no_sync, buckets
// whose all-reduces run on the comm stream while the compute stream is still blocked (overlap by events,
// no host join), shape checks across ranks and bad calls. Gradient values are small integers times powers
// of two, so every sum and mean is exact and the expected values need no reduction order.
#include <catch2/catch.hpp>

#include <chorus/cuda/twin/twin_team.hpp>
#include <chorus/parallel/device_gradient_reducer.hpp>

#include "support/scoped_env.hpp"
#include "support/twin_gate.hpp"

#include <chrono>
#include <cstring>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test_twin_gradient_reducer {

using chorus::DataType;
using chorus::Error;
using chorus::ErrorCode;
using chorus::cuda::TwinDevice;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::RankComm;
using chorus::cuda::twin::Stream;
using chorus::cuda::twin::Team;
using chorus::parallel::BucketOptions;
using chorus::parallel::DeviceGradientReducer;
using chorus::parallel::FinishWait;
using chorus::parallel::GradientCompression;
using chorus::parallel::ParamView;
using chorus::parallel::ReducerOptions;
using Reducer = DeviceGradientReducer<RankComm, TwinDevice>;

namespace {

Options small() {
  Options options;
  options.blocks = 1;
  options.threads = 2;
  return options;
}

// n ranks, each on a twin GPU of its own (devices 0..n-1), so each has its own streams as on real GPUs.
Team gpus(int n) {
  std::vector<int> devices;
  for (int d = 0; d < n; ++d) devices.push_back(d);
  return Team(devices, small());
}

using support::drained;
using support::Gate;

// One thread per rank runs body(rank, comm); what each rank found wrong comes back as text (Catch asserts
// only on the main thread). A thrown Error is recorded as "threw: <what>".
std::vector<std::vector<std::string>> on_every_rank(Team& team, const std::function<void(int, RankComm&, std::vector<std::string>&)>& body) {
  std::vector<std::vector<std::string>> found(static_cast<std::size_t>(team.size()));
  std::vector<std::thread> threads;
  for (int r = 0; r < team.size(); ++r) {
    threads.emplace_back([&, r] {
      auto& mine = found[static_cast<std::size_t>(r)];
      try {
        RankComm comm = team.comm(r);
        body(r, comm, mine);
      } catch (const std::exception& e) {
        mine.push_back(std::string("threw: ") + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return found;
}

void check_no_failures(const std::vector<std::vector<std::string>>& found) {
  for (std::size_t r = 0; r < found.size(); ++r) {
    INFO("rank " << r);
    for (const std::string& f : found[r]) FAIL_CHECK(f);
  }
}

// The gradients of one rank: several types and sizes (a 0-element tensor too), values exact in 16 bits.
struct Grads {
  std::vector<float> a, c;
  std::vector<double> b;
  std::vector<chorus::half> h;
  std::vector<chorus::bfloat16> g;
  std::vector<float> empty;
  Grads(int rank, int iteration)
      : a(1000), c(37), b(513), h(77), g(130) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = value(rank, iteration, i);
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = value(rank, iteration, i + 7);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = value(rank, iteration, i + 3);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = chorus::half(value(rank, iteration, i + 1));
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = chorus::bfloat16(value(rank, iteration, i + 5));
  }
  static constexpr std::size_t kShift[6] = {0, 3, 1, 0, 5, 7};  // per registration index: a b h empty g c
  // Small integers: divided by 1, 2 or 4 ranks and summed, exact in half and bfloat16.
  static float value(int rank, int iteration, std::size_t i) {
    return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 3 + static_cast<std::size_t>(iteration)) % 16) - 8);
  }
  std::vector<ParamView> views() {
    return {{"a", DataType::float32, a.data(), a.size()}, {"b", DataType::float64, b.data(), b.size()},
            {"h", DataType::float16, h.data(), h.size()}, {"empty", DataType::float32, nullptr, 0},
            {"g", DataType::bfloat16, g.data(), g.size()}, {"c", DataType::float32, c.data(), c.size()}};
  }
};

// Element i of every rank's tensor averaged over n ranks (exact).
float mean(int n, int iteration, std::size_t i) {
  float sum = 0;
  for (int r = 0; r < n; ++r) sum += Grads::value(r, iteration, i);
  return sum / static_cast<float>(n);
}

// What rank `rank` finds wrong with its reduced gradients.
void expect_means(const Grads& grads, int n, int iteration, std::vector<std::string>& found) {
  auto check = [&](const char* name, std::size_t size, std::size_t shift, auto at) {
    for (std::size_t i = 0; i < size; ++i) {
      const double want = mean(n, iteration, i + shift);
      if (static_cast<double>(at(i)) != want) {
        found.push_back(std::string(name) + "[" + std::to_string(i) + "] is " + std::to_string(static_cast<double>(at(i))) +
                        ", want " + std::to_string(want));
        return;
      }
    }
  };
  check("a", grads.a.size(), 0, [&](std::size_t i) { return grads.a[i]; });
  check("c", grads.c.size(), 7, [&](std::size_t i) { return grads.c[i]; });
  check("b", grads.b.size(), 3, [&](std::size_t i) { return grads.b[i]; });
  check("h", grads.h.size(), 1, [&](std::size_t i) { return static_cast<float>(grads.h[i]); });
  check("g", grads.g.size(), 5, [&](std::size_t i) { return static_cast<float>(grads.g[i]); });
}

ReducerOptions small_buckets() {
  ReducerOptions options;
  options.buckets.first_bucket_bytes = 1024;  // several buckets for these few kilobytes
  options.buckets.bucket_cap_bytes = 4096;
  return options;
}

}  // namespace

TEST_CASE("Device reducer: every rank gets the mean of every gradient, each type, several iterations") {
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  for (const int n : {1, 2, 4}) {
    for (const GradientCompression compression : {GradientCompression::none, GradientCompression::fp16, GradientCompression::bf16}) {
      INFO(n << " ranks, compression " << static_cast<int>(compression));
      Team team = gpus(n);
      std::vector<std::size_t> buckets(static_cast<std::size_t>(n));
      const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
        Stream compute, comm_stream;
        RankComm on_stream = comm.on(&comm_stream);
        ReducerOptions options = small_buckets();
        options.compression = compression;
        for (int iteration = 0; iteration < 2; ++iteration) {
          Grads grads(rank, iteration);
          Reducer reducer(on_stream, TwinDevice(rank), grads.views(), &compute, options);
          buckets[static_cast<std::size_t>(rank)] = reducer.plan().buckets.size();
          // Each rank marks in its own order: the all-reduces still go in bucket order.
          std::vector<std::size_t> order = {0, 1, 2, 3, 4, 5};
          if (rank % 2 == 1) order = {5, 3, 1, 4, 0, 2};
          for (std::size_t t : order) reducer.mark_ready(t);
          reducer.finish(FinishWait::host);
          expect_means(grads, n, iteration, f);
        }
      });
      check_no_failures(found);
      CHECK(buckets[0] >= 3);
    }
  }
}

TEST_CASE("Device reducer: virtual ranks on one device share one comm stream") {
  // cuda::Team::virtual_ranks launches every rank at once, so on one stream: each rank's thread makes that
  // shared stream wait on its own compute stream's event before the team call.
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  const int n = 4;
  Team team(n, small());
  Stream comm_stream;
  const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
    Stream compute;
    RankComm on_stream = comm.on(&comm_stream);
    Grads grads(rank, 0);
    Reducer reducer(on_stream, TwinDevice(0), grads.views(), &compute, small_buckets());
    for (std::size_t t = 6; t-- > 0;) reducer.mark_ready(t);
    reducer.finish(FinishWait::host);
    expect_means(grads, n, 0, f);
  });
  check_no_failures(found);
}

TEST_CASE("Device reducer: all-reduces run on the comm stream while the compute stream is still blocked") {
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  const int n = 2;
  Team team = gpus(n);
  const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
    Stream compute, comm_stream;
    RankComm on_stream = comm.on(&comm_stream);
    Grads grads(rank, 0);
    Reducer reducer(on_stream, TwinDevice(rank), grads.views(), &compute, small_buckets());
    const auto& first = reducer.plan().buckets[0];
    for (std::size_t t : first.tensors) reducer.mark_ready(t);
    Gate backward(compute);  // the next layer's backward, still running
    // Bucket 0's all-reduce completes while the compute stream is blocked: ordered by its event, not by a
    // host join, and not behind the compute stream's later work.
    if (!drained(comm_stream)) f.push_back("the comm stream did not finish bucket 0 while compute was blocked");
    // Every element of bucket 0 already holds its mean (read as float from the bucket's wire type).
    std::vector<float> bucket0(first.count);
    chorus::copy_floating(reducer.bucket_data(0), reducer.wire_type(0), bucket0.data(), DataType::float32, first.count);
    for (std::size_t k = 0; k < first.tensors.size(); ++k) {
      const std::size_t t = first.tensors[k];
      for (std::size_t i = 0; i < grads.views()[t].count; ++i) {
        if (bucket0[first.offsets[k] + i] != mean(n, 0, i + Grads::kShift[t])) {
          f.push_back("bucket 0 was not reduced while compute was blocked (tensor " + std::to_string(t) + ")");
          break;
        }
      }
    }
    // The rest is marked while the compute stream is still blocked: mark_ready only enqueues.
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t t = 0; t < grads.views().size(); ++t) {
      bool in_first = false;
      for (std::size_t u : first.tensors) in_first = in_first || u == t;
      if (!in_first) reducer.mark_ready(t);
    }
    reducer.finish();  // FinishWait::stream: returns with the copies back still queued behind the gate
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) f.push_back("mark_ready/finish waited on the host");
    if (grads.a[0] != Grads::value(rank, 0, 0)) f.push_back("a was written back before the compute stream got there");
    backward.release();
    if (!drained(compute)) f.push_back("the compute stream did not drain");
    expect_means(grads, n, 0, f);
  });
  check_no_failures(found);
}

TEST_CASE("Device reducer: each all-reduce waits for its bucket's copies, the copies back for the all-reduces") {
  // The compute stream is blocked before any copy: an all-reduce not ordered after its bucket's event would
  // reduce the bucket before the gradients arrive, and copies back not ordered after the last all-reduce
  // would write unreduced values.
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  const int n = 2;
  Team team = gpus(n);
  const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
    Stream compute, comm_stream;
    RankComm on_stream = comm.on(&comm_stream);
    Grads grads(rank, 1);
    Reducer reducer(on_stream, TwinDevice(rank), grads.views(), &compute, small_buckets());
    Gate backward(compute);
    for (std::size_t t = 0; t < 6; ++t) reducer.mark_ready(t);
    reducer.finish();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // time for anything unordered to run early
    backward.release();
    if (!drained(compute)) f.push_back("the compute stream did not drain");
    expect_means(grads, n, 1, f);
  });
  check_no_failures(found);
}

TEST_CASE("Device reducer: no_sync iterations communicate nothing; the next synced one reduces the sums") {
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  const int n = 4;
  Team team = gpus(n);
  const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
    Stream compute, comm_stream;
    RankComm on_stream = comm.on(&comm_stream);
    Grads grads(rank, 0);
    Reducer reducer(on_stream, TwinDevice(rank), grads.views(), &compute, small_buckets());
    {
      auto guard = reducer.no_sync();
      for (std::size_t t = 0; t < 6; ++t) reducer.mark_ready(t);
      reducer.finish(FinishWait::host);
    }
    if (grads.a[5] != Grads::value(rank, 0, 5)) f.push_back("a no_sync iteration changed the gradients");
    if (!reducer.sync_enabled()) f.push_back("sync stayed off after the guard");
    for (std::size_t t = 0; t < 6; ++t) reducer.mark_ready(grads.views()[t]);  // by view
    reducer.finish(FinishWait::host);
    expect_means(grads, n, 0, f);
  });
  check_no_failures(found);
}

TEST_CASE("Device reducer: its device memory is the buckets once, each rounded to 256 bytes") {
  Team team = gpus(1);
  const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
    Stream compute;
    Grads grads(rank, 0);
    ReducerOptions options = small_buckets();
    for (const GradientCompression compression : {GradientCompression::none, GradientCompression::fp16}) {
      options.compression = compression;
      Reducer reducer(comm, TwinDevice(rank), grads.views(), &compute, options);
      std::size_t want = 0;
      for (std::size_t b = 0; b < reducer.plan().buckets.size(); ++b) {
        want += (reducer.plan().buckets[b].count * chorus::size_of(reducer.wire_type(b)) + 255) / 256 * 256;
      }
      if (reducer.device_bytes() != want) f.push_back("device_bytes " + std::to_string(reducer.device_bytes()) + ", want " + std::to_string(want));
      if (compression == GradientCompression::fp16 && reducer.device_bytes() >= 4 * 1000 + 8 * 513) {
        f.push_back("fp16 buckets are not smaller: " + std::to_string(reducer.device_bytes()));
      }
    }
  });
  check_no_failures(found);
}

TEST_CASE("Device reducer: bad calls and ranks that disagree get chorus::Error naming them") {
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  SECTION("out of range, twice, not marked, unknown view; then unusable") {
    Team team = gpus(2);
    const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
      Stream compute, comm_stream;
      RankComm on_stream = comm.on(&comm_stream);
      Grads grads(rank, 0);
      Reducer reducer(on_stream, TwinDevice(rank), grads.views(), &compute, small_buckets());
      auto expect_error = [&](const std::function<void()>& call, const std::string& part) {
        try {
          call();
          f.push_back("no error for: " + part);
        } catch (const Error& e) {
          const std::string what = e.what();
          if (what.find(part) == std::string::npos || what.find("DeviceGradientReducer") == std::string::npos ||
              what.find("rank " + std::to_string(rank)) == std::string::npos) {
            f.push_back("error without '" + part + "', the call or the rank: " + what);
          }
        }
      };
      expect_error([&] { reducer.mark_ready(6); }, "tensor index 6 is out of range (6 tensors)");
      float stranger = 0;
      expect_error([&] { reducer.mark_ready(ParamView{"stranger", DataType::float32, &stranger, 1}); },
                   "'stranger' is not one of the reducer's 6 gradients");
      reducer.mark_ready(0);
      expect_error([&] { reducer.mark_ready(0); }, "'a' was already marked ready");
      expect_error([&] { reducer.finish(); }, "tensor 1 'b' was not marked ready in this iteration (1 of 6 were)");
      expect_error([&] { reducer.mark_ready(1); }, "unusable after an earlier error");
    });
    check_no_failures(found);
  }
  SECTION("a rank whose tensor differs: every rank gets the same mismatch") {
    Team team = gpus(3);
    std::vector<std::string> messages(3);
    const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
      Stream compute;
      Grads grads(rank, 0);
      std::vector<ParamView> views = grads.views();
      if (rank == 2) views[1].count = 500;  // b: 513 elsewhere
      try {
        Reducer reducer(comm, TwinDevice(rank), views, &compute, small_buckets());
        f.push_back("no mismatch reported");
      } catch (const Error& e) {
        if (e.code() != ErrorCode::mismatch) f.push_back(std::string("not a mismatch: ") + e.what());
        const std::string what = e.what();  // the same text on every rank, up to what this rank holds
        const std::size_t from = what.find("tensor 1");
        messages[static_cast<std::size_t>(rank)] = from == std::string::npos ? what : what.substr(from, what.find(" (this rank") - from);
      }
    });
    check_no_failures(found);
    CHECK(messages[0] == messages[1]);
    CHECK(messages[1] == messages[2]);
    CHECK_THAT(messages[0], Catch::Matchers::Contains("tensor 1 'b' differs between the ranks: counts from 500 to 513"));
  }
  SECTION("gradients that are not floating point") {
    Team team = gpus(1);
    const auto found = on_every_rank(team, [&](int rank, RankComm& comm, std::vector<std::string>& f) {
      Stream compute;
      std::vector<int> ints(4);
      try {
        Reducer reducer(comm, TwinDevice(rank), {{"i", DataType::int32, ints.data(), 4}}, &compute);
        f.push_back("int32 gradients accepted");
      } catch (const Error& e) {
        if (std::string(e.what()).find("gradients must be floating point") == std::string::npos) f.push_back(e.what());
      }
    });
    check_no_failures(found);
  }
}

}  // namespace test_twin_gradient_reducer
