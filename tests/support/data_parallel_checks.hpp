// Data-parallel and mesh checks written once against the communicator contract and run on every
// communicator: host threads, the mailbox fake, MPI processes (one per rank). Each rank calls a
// check with its Comm and gets back the failures it saw as text; the main thread asserts (Catch2
// is not thread-safe). Nothing here is shared between ranks: every expected value is computed by
// each rank from the rank numbers alone, so the checks work in separate processes too.
#pragma once

#include <chorus/core/communicator.hpp>
#include <chorus/core/error.hpp>
#include <chorus/parallel/adam.hpp>
#include <chorus/parallel/broadcast_parameters.hpp>
#include <chorus/parallel/distributed_sampler.hpp>
#include <chorus/parallel/gradient_reducer.hpp>
#include <chorus/parallel/local_sgd.hpp>
#include <chorus/parallel/mesh.hpp>
#include <chorus/parallel/mesh_comms.hpp>
#include <chorus/parallel/sgd.hpp>
#include <chorus/parallel/zero_redundancy_optimizer.hpp>

#include "recording_comm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dp_checks {

using chorus::DataType;
using chorus::ReduceOp;
using chorus::detail::concat;
namespace par = chorus::parallel;

// The communicator that records its calls (tests/support/recording_comm.hpp).
using support::Call;
using support::CallLog;
using support::RecordingComm;

// ---- Small helpers.

class Failures {
 public:
  void expect(bool ok, const std::string& what) {
    if (!ok) failures_.push_back(what);
  }
  void fail(const std::string& what) { failures_.push_back(what); }
  std::vector<std::string> take() { return std::move(failures_); }

 private:
  std::vector<std::string> failures_;
};

template <class T>
bool close(const std::vector<T>& got, const std::vector<T>& want, double tolerance) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (!(std::fabs(g - w) <= tolerance * std::max(1.0, std::fabs(w)))) return false;
  }
  return true;
}

template <class T>
std::string show(const std::vector<T>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size() && i < 8; ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + (values.size() > 8 ? ", ...]" : "]");
}

// Polls `ready` for up to `limit`: a bounded wait on another thread's progress.
template <class Pred>
bool eventually(Pred ready, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Runs `body`, which must throw chorus::Error with `code` and a message containing every `part`.
template <class Body>
void expect_error(Failures& f, const std::string& what, chorus::ErrorCode code, const std::vector<std::string>& parts,
                  Body body) {
  try {
    body();
    f.fail(what + ": no chorus::Error");
  } catch (const chorus::Error& e) {
    bool ok = e.code() == code;
    for (const std::string& part : parts) ok = ok && std::string(e.what()).find(part) != std::string::npos;
    if (!ok) f.fail(what + ": wrong error: " + e.what());
  }
}

// ---- A linear model y = W x + b (W float32 3x4, b float64 3) with loss 0.5 |y - target|^2 per
// sample, so data parallelism can be compared with one rank on the whole batch.

constexpr std::size_t kIn = 4, kOut = 3;

struct Linear {
  std::vector<float> w = std::vector<float>(kOut * kIn);
  std::vector<double> b = std::vector<double>(kOut);
  std::vector<float> gw = std::vector<float>(kOut * kIn);
  std::vector<double> gb = std::vector<double>(kOut);

  std::vector<par::ParamView> params() { return {par::param_view("w", w), par::param_view("b", b)}; }
  std::vector<par::ParamView> grads() { return {par::param_view("w.grad", gw), par::param_view("b.grad", gb)}; }
};

// Different on every rank, so only the broadcast makes them agree.
inline Linear initial_model(int rank) {
  Linear m;
  for (std::size_t i = 0; i < m.w.size(); ++i) m.w[i] = static_cast<float>(static_cast<int>(i % 5) - 2) / 8 + rank;
  for (std::size_t k = 0; k < kOut; ++k) m.b[k] = static_cast<double>(k) / 4 - rank;
  return m;
}

inline double input(std::size_t sample, std::size_t j) { return static_cast<double>(static_cast<int>((sample * 5 + j * 3) % 7) - 3) / 4; }
inline double target(std::size_t sample, std::size_t k) { return static_cast<double>(static_cast<int>((sample * 3 + k) % 5) - 2) / 2; }

// Gradients of the loss over `samples`, averaged (mean loss) or summed.
inline void backward(Linear& m, const std::vector<std::size_t>& samples, bool mean) {
  std::vector<double> gw(m.gw.size(), 0.0), gb(kOut, 0.0);
  for (std::size_t s : samples) {
    for (std::size_t k = 0; k < kOut; ++k) {
      double y = m.b[k];
      for (std::size_t j = 0; j < kIn; ++j) y += m.w[k * kIn + j] * input(s, j);
      const double err = y - target(s, k);
      gb[k] += err;
      for (std::size_t j = 0; j < kIn; ++j) gw[k * kIn + j] += err * input(s, j);
    }
  }
  const double scale = mean && !samples.empty() ? 1.0 / static_cast<double>(samples.size()) : 1.0;
  for (std::size_t i = 0; i < gw.size(); ++i) m.gw[i] = static_cast<float>(gw[i] * scale);
  for (std::size_t k = 0; k < kOut; ++k) m.gb[k] = gb[k] * scale;
}

inline void sgd_step(Linear& m, double lr) {
  for (std::size_t i = 0; i < m.w.size(); ++i) m.w[i] -= static_cast<float>(lr) * m.gw[i];
  for (std::size_t k = 0; k < kOut; ++k) m.b[k] -= lr * m.gb[k];
}

// ---- The checks.

// N ranks x batch B with averaged gradients take the same SGD steps as one rank with batch N*B.
// Parameters start different on every rank; broadcast_parameters makes them rank 0's, bit for bit.
template <class Comm>
std::vector<std::string> check_dp_equals_large_batch(Comm& comm) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = comm.size(), r = comm.rank();
  constexpr std::size_t kBatch = 3;
  constexpr double kLr = 0.05;
  for (bool overlap : {true, false}) {
    const std::string mode = overlap ? " (overlap)" : " (no overlap)";
    Linear dp = initial_model(r), single = initial_model(0);
    par::broadcast_parameters(comm, dp.params());
    f.expect(dp.w == single.w && dp.b == single.b, concat("broadcast_parameters: rank ", r, " differs from rank 0", mode));

    par::ReducerOptions options;
    options.overlap = overlap;
    par::GradientReducer<Comm> reducer(comm, dp.grads(), options);
    const std::size_t global = kBatch * static_cast<std::size_t>(n);
    par::DistributedSampler sampler = par::make_distributed_sampler(comm, 4 * global, {true, 7, false});
    for (std::uint64_t step = 0; step < 3; ++step) {
      sampler.set_epoch(step);
      const std::vector<std::size_t> order = sampler.epoch_order(), mine = sampler.indices();
      const std::vector<std::size_t> local(mine.begin(), mine.begin() + kBatch);
      std::vector<std::size_t> everyone;  // the same global batch: the first kBatch of every rank's slice
      for (std::size_t i = 0; i < global; ++i) everyone.push_back(order[i]);

      backward(dp, local, true);
      reducer.mark_ready(1);  // backward order: b, then w
      reducer.mark_ready(0);
      reducer.finish();
      sgd_step(dp, kLr);
      backward(single, everyone, true);
      sgd_step(single, kLr);
      // b is float64, but its gradient depends on the float32 w, so both agree to float32 precision.
      f.expect(close(dp.w, single.w, 1e-6) && close(dp.b, single.b, 1e-6),
               concat("step ", step, ": data parallel on rank ", r, " of ", n, " gives w ", show(dp.w), " b ", show(dp.b),
                      ", one rank with the whole batch w ", show(single.w), " b ", show(single.b), mode));
    }
  }
  // DDP's caveat: with a summed loss, averaging makes the update N times smaller than one rank's.
  {
    Linear dp = initial_model(0), single = initial_model(0);
    par::GradientReducer<Comm> reducer(comm, dp.grads());
    std::vector<std::size_t> mine, everyone;
    for (std::size_t s = 0; s < 2 * static_cast<std::size_t>(n); ++s) {
      everyone.push_back(s);
      if (s % static_cast<std::size_t>(n) == static_cast<std::size_t>(r)) mine.push_back(s);
    }
    backward(dp, mine, false);
    reducer.mark_ready(dp.grads()[0]);
    reducer.mark_ready(dp.grads()[1]);
    reducer.finish();
    backward(single, everyone, false);
    for (float& g : single.gw) g /= static_cast<float>(n);
    for (double& g : single.gb) g /= n;
    f.expect(close(dp.gw, single.gw, 1e-6) && close(dp.gb, single.gb, 1e-6),
             concat("summed loss: averaged gradient on rank ", r, " is not 1/", n, " of one rank's"));
  }
  return f.take();
}

// Five float tensors of 10..50 elements; caps of 200 and 280 bytes plan three buckets:
// {t4} (50 elements), {t3, t2} (70), {t1, t0} (30).
struct FiveTensors {
  std::vector<std::vector<float>> grads;
  explicit FiveTensors(int rank) {
    for (std::size_t t = 0; t < 5; ++t) {
      grads.emplace_back(10 * (t + 1));
      for (std::size_t i = 0; i < grads[t].size(); ++i) grads[t][i] = static_cast<float>((rank + 1) * (t + 1) + i % 3);
    }
  }
  std::vector<par::ParamView> views() {
    std::vector<par::ParamView> v;
    for (std::size_t t = 0; t < grads.size(); ++t) v.push_back(par::param_view(concat("t", t), grads[t]));
    return v;
  }
  // The sum over `ranks` ranks of tensor t.
  static std::vector<float> sum(int ranks, std::size_t t) {
    std::vector<float> total(10 * (t + 1), 0.0f);
    for (int r = 0; r < ranks; ++r) {
      FiveTensors one(r);
      for (std::size_t i = 0; i < total.size(); ++i) total[i] += one.grads[t][i];
    }
    return total;
  }
};

inline par::ReducerOptions five_tensor_options(bool overlap) {
  par::ReducerOptions options;
  options.buckets.first_bucket_bytes = 50 * sizeof(float);
  options.buckets.bucket_cap_bytes = 70 * sizeof(float);
  options.average = false;  // sums of small integers: exact
  options.overlap = overlap;
  return options;
}

inline std::vector<std::size_t> launched_counts(const CallLog& log) {
  std::vector<std::size_t> counts;
  for (const Call& c : log.calls("all_reduce")) counts.push_back(c.count);
  return counts;
}

// A bucket launches as soon as it is full, and never before the buckets ahead of it.
template <class Comm>
std::vector<std::string> check_bucket_launch_order(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = base.size(), r = base.rank();
  const std::vector<std::size_t> in_order = {50, 70, 30};
  for (bool overlap : {true, false}) {
    const std::string mode = overlap ? " (overlap)" : " (no overlap)";
    // In ready order: each bucket's all-reduce starts before the next tensor is marked.
    {
      RecordingComm<Comm> comm(base);
      FiveTensors five(r);
      par::GradientReducer<RecordingComm<Comm>> reducer(comm, five.views(), five_tensor_options(overlap));
      const par::BucketPlan& plan = reducer.plan();
      f.expect(plan.buckets.size() == 3 && plan.buckets[0].tensors == std::vector<std::size_t>{4} &&
                   plan.buckets[1].tensors == std::vector<std::size_t>{3, 2} &&
                   plan.buckets[2].tensors == std::vector<std::size_t>{1, 0},
               "bucket plan of five tensors" + mode);
      reducer.mark_ready(4);
      f.expect(eventually([&] { return comm.log().count("all_reduce") == 1; }),
               concat("bucket 0 was full but its all-reduce did not start on rank ", r, mode));
      reducer.mark_ready(3);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      f.expect(comm.log().count("all_reduce") == 1, "bucket 1 launched before it was full" + mode);
      reducer.mark_ready(2);
      f.expect(eventually([&] { return comm.log().count("all_reduce") == 2; }),
               concat("bucket 1 was full but its all-reduce did not start on rank ", r, mode));
      reducer.mark_ready(1);
      reducer.mark_ready(0);
      reducer.finish();
      f.expect(launched_counts(comm.log()) == in_order,
               concat("launch order ", show(launched_counts(comm.log())), " on rank ", r, mode));
      for (std::size_t t = 0; t < 5; ++t) {
        f.expect(five.grads[t] == FiveTensors::sum(n, t), concat("tensor ", t, " after the all-reduce on rank ", r, mode));
      }
    }
    // Out of order: buckets 2 and 1 fill first and wait for bucket 0.
    {
      RecordingComm<Comm> comm(base);
      FiveTensors five(r);
      par::GradientReducer<RecordingComm<Comm>> reducer(comm, five.views(), five_tensor_options(overlap));
      for (std::size_t t : {0, 1, 2, 3}) reducer.mark_ready(t);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      f.expect(comm.log().count("all_reduce") == 0,
               concat("buckets 2 and 1 launched before bucket 0 on rank ", r, mode));
      reducer.mark_ready(4);
      reducer.finish();
      f.expect(launched_counts(comm.log()) == in_order,
               concat("launch order after out-of-order readiness ", show(launched_counts(comm.log())), " on rank ", r,
                      mode));
      for (std::size_t t = 0; t < 5; ++t) {
        f.expect(five.grads[t] == FiveTensors::sum(n, t), concat("tensor ", t, " after out-of-order readiness", mode));
      }
    }
  }
  return f.take();
}

// k micro-steps under no_sync, then one synced: one all-reduce per bucket, and the result is the
// average over ranks of each rank's accumulated gradients. Then a plain synced step works again.
template <class Comm>
std::vector<std::string> check_no_sync(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = base.size(), r = base.rank();
  RecordingComm<Comm> comm(base);
  FiveTensors five(r);
  for (auto& g : five.grads) std::fill(g.begin(), g.end(), 0.0f);
  par::ReducerOptions options = five_tensor_options(true);
  options.average = true;
  par::GradientReducer<RecordingComm<Comm>> reducer(comm, five.views(), options);
  // Micro-step k adds n * (r + k + i % 4): its average over ranks is exact.
  auto micro_step = [&](int k) {
    for (std::size_t t = 5; t-- > 0;) {  // backward: the last tensor's gradient first
      for (std::size_t i = 0; i < five.grads[t].size(); ++i) five.grads[t][i] += static_cast<float>(n * (r + k + static_cast<int>(i % 4)));
      reducer.mark_ready(t);
    }
  };
  for (int k = 0; k < 3; ++k) {
    auto no_sync = reducer.no_sync();
    micro_step(k);
    reducer.finish();
  }
  f.expect(comm.log().count("all_reduce") == 0, concat("no_sync micro-steps communicated on rank ", r));
  micro_step(3);
  reducer.finish();
  f.expect(comm.log().count("all_reduce") == reducer.plan().buckets.size(),
           concat(comm.log().count("all_reduce"), " all-reduces for ", reducer.plan().buckets.size(),
                  " buckets after 4 micro-steps on rank ", r));
  for (std::size_t t = 0; t < 5; ++t) {
    std::vector<float> want(five.grads[t].size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      double total = 0;
      for (int p = 0; p < n; ++p) {
        for (int k = 0; k < 4; ++k) total += n * (p + k + static_cast<int>(i % 4));
      }
      want[i] = static_cast<float>(total / n);
    }
    f.expect(five.grads[t] == want, concat("accumulated tensor ", t, " on rank ", r, ": ", show(five.grads[t]),
                                           ", expected ", show(want)));
  }
  return f.take();
}

// fp16 and bf16 compression: the buckets travel as 16 bits and come back as the same averages
// (values exact in 16 bits, so exactly).
template <class Comm>
std::vector<std::string> check_compression(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = base.size(), r = base.rank();
  for (auto [compression, wire] : {std::pair{par::GradientCompression::fp16, DataType::float16},
                                   std::pair{par::GradientCompression::bf16, DataType::bfloat16}}) {
    RecordingComm<Comm> comm(base);
    std::vector<float> g(300);
    std::vector<double> h(7);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(n * (r + static_cast<int>(i % 5) - 2));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = n * (r - static_cast<double>(i));
    par::ReducerOptions options;
    options.compression = compression;
    par::GradientReducer<RecordingComm<Comm>> reducer(comm, {par::param_view("g", g), par::param_view("h", h)},
                                                      options);
    reducer.mark_ready(1);
    reducer.mark_ready(0);
    reducer.finish();
    const std::vector<Call> calls = comm.log().calls("all_reduce");
    bool all_wire = calls.size() == 2;
    for (const Call& c : calls) all_wire = all_wire && c.type == wire;
    f.expect(all_wire, concat("compressed buckets did not travel as ", chorus::to_string(wire), " on rank ", r));
    const double rank_mean = (n - 1) / 2.0;
    bool ok = true;
    for (std::size_t i = 0; i < g.size(); ++i) ok = ok && g[i] == static_cast<float>(n * (rank_mean + static_cast<int>(i % 5) - 2));
    for (std::size_t i = 0; i < h.size(); ++i) ok = ok && h[i] == n * (rank_mean - static_cast<double>(i));
    f.expect(ok, concat("compressed average wrong on rank ", r, " with ", chorus::to_string(wire), ": ", show(g)));
  }
  return f.take();
}

// Bad input gives chorus::Error, the same on every rank, and leaves the communicator usable.
template <class Comm>
std::vector<std::string> check_reducer_errors(Comm& comm) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  using chorus::ErrorCode;
  Failures f;
  const int n = comm.size(), r = comm.rank();
  {
    FiveTensors five(r);
    par::GradientReducer<Comm> reducer(comm, five.views(), five_tensor_options(true));
    expect_error(f, "mark_ready(out of range)", ErrorCode::invalid_argument, {"tensor index 9", "5 tensors"},
                 [&] { reducer.mark_ready(9); });
    std::vector<float> stranger(3);
    expect_error(f, "mark_ready(unknown tensor)", ErrorCode::invalid_argument, {"'stranger'"},
                 [&] { reducer.mark_ready(par::param_view("stranger", stranger)); });
    reducer.mark_ready(4);
    expect_error(f, "mark_ready twice", ErrorCode::invalid_argument, {"tensor 4 't4'", "already marked"},
                 [&] { reducer.mark_ready(4); });
    for (std::size_t t : {3, 2, 1, 0}) reducer.mark_ready(t);  // the iteration still completes
    reducer.finish();
    f.expect(five.grads[0] == FiveTensors::sum(n, 0), "an iteration after rejected calls reduced wrongly");
    // finish with t0 (the last bucket) unmarked: an error, and the reducer refuses further use.
    for (std::size_t t : {4, 3, 2, 1}) reducer.mark_ready(t);
    expect_error(f, "finish with an unmarked tensor", ErrorCode::invalid_argument,
                 {"tensor 0 't0' was not marked ready", "4 of 5"}, [&] { reducer.finish(); });
    expect_error(f, "mark_ready after an error", ErrorCode::invalid_argument, {"unusable"},
                 [&] { reducer.mark_ready(0); });
  }
  {
    std::vector<std::int32_t> counts(4);
    expect_error(f, "integer gradients", ErrorCode::invalid_argument, {"int32", "floating point"},
                 [&] { par::GradientReducer<Comm> reducer(comm, {par::param_view("counts", counts)}); });
  }
  if (n > 1) {
    // The last rank's model has a longer bias: everyone hears about tensor 1 and both ranks.
    Linear m = initial_model(r);
    if (r == n - 1) m.b.resize(kOut + 2);
    const std::string tensor = "tensor 1 'b'";
    const std::string held = concat("rank 0 has ", kOut, " float64 elements, rank ", n - 1, " has ", kOut + 2);
    expect_error(f, "broadcast_parameters with a mismatched tensor", ErrorCode::mismatch, {tensor, held},
                 [&] { par::broadcast_parameters(comm, m.params()); });
    // A missing tensor on the last rank.
    Linear keep = initial_model(r);
    std::vector<par::ParamView> params = keep.params();
    if (r == n - 1) params.pop_back();
    expect_error(f, "verify_parameter_shapes with a missing tensor", ErrorCode::mismatch,
                 {"tensor 1 'b'", concat("rank ", n - 1, " has no such tensor (it has 1)")},
                 [&] { par::verify_parameter_shapes(comm, params); });
  }
  expect_error(f, "broadcast_parameters from a root out of range", ErrorCode::invalid_argument, {"root"},
               [&] { Linear m = initial_model(r); par::broadcast_parameters(comm, m.params(), n); });
  std::int32_t one = 1;  // still usable, and every rank got here
  comm.all_reduce(&one, &one, 1, ReduceOp::sum);
  f.expect(one == n, concat("the communicator is unusable after the errors on rank ", r));
  return f.take();
}

// An all-reduce that fails on the communication thread reaches the caller of finish() (or of
// mark_ready without overlap); after it the reducer refuses further use. Failures are injected on
// every rank alike, so no rank waits for another.
template <class Comm>
std::vector<std::string> check_comm_thread_error(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  using chorus::ErrorCode;
  Failures f;
  for (bool overlap : {true, false}) {
    const std::string mode = overlap ? " (overlap)" : " (no overlap)";
    RecordingComm<Comm> comm(base);
    FiveTensors five(base.rank());
    par::GradientReducer<RecordingComm<Comm>> reducer(comm, five.views(), five_tensor_options(overlap));
    comm.fail_all_reduces();
    expect_error(f, "a failed all-reduce" + mode, ErrorCode::internal, {"injected failure"}, [&] {
      for (std::size_t t : {4, 3, 2, 1, 0}) reducer.mark_ready(t);
      reducer.finish();
    });
    expect_error(f, "finish after a failed all-reduce" + mode, ErrorCode::invalid_argument,
                 {"unusable after an earlier error", "injected failure"}, [&] { reducer.finish(); });
    f.expect(comm.log().count("all_reduce") == 1, concat("buckets after the failed one were launched", mode));
  }
  return f.take();
}

// ZeRO-1 leaves the parameters plain data parallelism leaves (SGD with momentum, and Adam), keeps
// 1/N of the optimizer state, and moves one reduce_scatter and one all_gather of a shard per step.
template <class Comm, class Optimizer>
std::vector<std::string> check_zero_equals_dp(Comm& base, const Optimizer& prototype, std::size_t state_per_element,
                                              const char* name) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = base.size(), r = base.rank();
  const std::vector<std::size_t> sizes = {7, 5, 4};  // 16 elements: padded when N does not divide 16
  std::vector<std::vector<float>> dp_params, zero_params, dp_grads, zero_grads;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    std::vector<float> p(sizes[t]);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(static_cast<int>((t * 7 + i * 3) % 11) - 5) / 4;
    dp_params.push_back(p);
    zero_params.push_back(p);
    dp_grads.emplace_back(sizes[t]);
    zero_grads.emplace_back(sizes[t]);
  }
  auto views = [&](std::vector<std::vector<float>>& tensors, const char* prefix) {
    std::vector<par::ParamView> v;
    for (std::size_t t = 0; t < tensors.size(); ++t) v.push_back(par::param_view(concat(prefix, t), tensors[t]));
    return v;
  };
  RecordingComm<Comm> comm(base);
  par::GradientReducer<Comm> reducer(base, views(dp_grads, "g"));
  Optimizer full = prototype;
  par::ZeroRedundancyOptimizer<RecordingComm<Comm>, Optimizer> zero(comm, views(zero_params, "p"),
                                                                    views(zero_grads, "g"), prototype);
  for (int step = 0; step < 3; ++step) {
    // Rank-, step- and parameter-dependent gradients, computed alike on both paths.
    auto gradient = [&](std::size_t t, std::size_t i, float param) {
      return static_cast<float>(static_cast<int>((r * 5 + step * 3 + static_cast<int>(i + t)) % 7) - 3) / 2 + param / 8;
    };
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      for (std::size_t i = 0; i < sizes[t]; ++i) {
        dp_grads[t][i] = gradient(t, i, dp_params[t][i]);
        zero_grads[t][i] = gradient(t, i, zero_params[t][i]);
      }
    }
    for (std::size_t t = sizes.size(); t-- > 0;) reducer.mark_ready(t);
    reducer.finish();
    // Plain DP: one optimizer over all parameters laid end to end.
    std::vector<float> flat_p, flat_g;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      flat_p.insert(flat_p.end(), dp_params[t].begin(), dp_params[t].end());
      flat_g.insert(flat_g.end(), dp_grads[t].begin(), dp_grads[t].end());
    }
    full.step(flat_p.data(), flat_g.data(), flat_p.size());
    std::size_t at = 0;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      std::copy_n(flat_p.begin() + static_cast<std::ptrdiff_t>(at), sizes[t], dp_params[t].begin());
      at += sizes[t];
    }
    zero.step();
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      f.expect(close(zero_params[t], dp_params[t], 1e-6),
               concat(name, " step ", step, " tensor ", t, " on rank ", r, " of ", n, ": ZeRO-1 ", show(zero_params[t]),
                      ", data parallel ", show(dp_params[t])));
    }
  }
  const std::size_t shard = zero.shard_elements(), total = zero.total_elements();
  f.expect(shard * static_cast<std::size_t>(n) >= total && shard * static_cast<std::size_t>(n) < total + static_cast<std::size_t>(n),
           concat(name, ": shard of ", shard, " for ", total, " elements on ", n, " ranks"));
  f.expect(zero.optimizer().state_elements() == state_per_element * shard &&
               full.state_elements() == state_per_element * total,
           concat(name, ": optimizer state ", zero.optimizer().state_elements(), " elements on rank ", r,
                  ", expected ", state_per_element, " x ", shard));
  const std::vector<Call> rs = comm.log().calls("reduce_scatter"), ag = comm.log().calls("all_gather");
  bool shard_sized = rs.size() == 3 && comm.log().count("all_reduce") == 0;
  for (const Call& c : rs) shard_sized = shard_sized && c.count == shard;
  // verify_parameter_shapes' two all_gathers come first; then one per step.
  shard_sized = shard_sized && ag.size() == 5;
  for (std::size_t i = 2; i < ag.size(); ++i) shard_sized = shard_sized && ag[i].count == shard;
  f.expect(shard_sized, concat(name, ": ZeRO-1 made ", rs.size(), " reduce_scatters and ", ag.size(),
                               " all_gathers (expected 3 and 2 + 3, of ", shard, " elements)"));
  return f.take();
}

template <class Comm>
std::vector<std::string> check_zero(Comm& comm) {
  std::vector<std::string> failures = check_zero_equals_dp(comm, par::Sgd(0.1, 0.9, 0.01), 1, "SGD with momentum");
  std::vector<std::string> adam = check_zero_equals_dp(comm, par::Adam({0.01, 0.9, 0.999, 1e-8, 0.01}), 2, "Adam");
  failures.insert(failures.end(), adam.begin(), adam.end());
  return failures;
}

// Local SGD: period local steps on each rank's own gradients, then the parameters are averaged.
template <class Comm>
std::vector<std::string> check_local_sgd(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = base.size(), r = base.rank();
  RecordingComm<Comm> comm(base);
  std::vector<float> p(6, 1.0f), g(6);
  par::LocalSgd<RecordingComm<Comm>> local(comm, {par::param_view("p", p)}, 2);
  std::vector<bool> averaged;
  for (int step = 0; step < 4; ++step) {
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(r + step + static_cast<int>(i));
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= 0.25f * g[i];
    averaged.push_back(local.after_step());
  }
  f.expect(averaged == std::vector<bool>{false, true, false, true}, "LocalSgd averaged on the wrong steps");
  f.expect(comm.log().count("all_reduce") == 2, concat(comm.log().count("all_reduce"), " all-reduces for 2 periods"));
  // After two periods: 1 - 0.25 * sum over steps of the mean gradient (exact: quarters of integers).
  std::vector<float> want(6);
  for (std::size_t i = 0; i < want.size(); ++i) {
    double total = 0;
    for (int step = 0; step < 4; ++step) total += (n - 1) / 2.0 + step + static_cast<double>(i);
    want[i] = static_cast<float>(1.0 - 0.25 * total);
  }
  f.expect(close(p, want, 1e-6), concat("local SGD on rank ", r, ": ", show(p), ", expected ", show(want)));
  return f.take();
}

// The sampler's lists, gathered from every rank and interleaved, are the epoch's order; unpadded
// they cover the dataset; the same seed and epoch give the same order everywhere.
template <class Comm>
std::vector<std::string> check_sampler(Comm& comm) {
  static_assert(chorus::is_communicator_v<Comm>, "data-parallel checks run on chorus communicators");
  Failures f;
  const int n = comm.size(), r = comm.rank();
  const auto w = static_cast<std::size_t>(n);
  for (std::size_t size : {0, 1, 10, 17}) {
    for (bool shuffle : {false, true}) {
      for (bool drop_last : {false, true}) {
        for (std::uint64_t epoch : {0, 3}) {
          par::DistributedSampler sampler = par::make_distributed_sampler(comm, size, {shuffle, 42, drop_last});
          sampler.set_epoch(epoch);
          const std::string where = concat("N=", size, " W=", n, shuffle ? " shuffled" : "", drop_last ? " drop_last" : "",
                                           " epoch ", epoch, " rank ", r);
          const std::vector<std::size_t> mine = sampler.indices();
          const std::size_t want_samples = drop_last ? size / w : (size + w - 1) / w;
          f.expect(mine.size() == want_samples && sampler.num_samples() == want_samples,
                   concat(where, ": ", mine.size(), " samples, expected ", want_samples));
          if (mine.size() != want_samples) continue;
          std::vector<std::uint64_t> own(mine.begin(), mine.end()), all(want_samples * w);
          comm.all_gather(own.data(), all.data(), own.size());
          std::vector<std::uint64_t> interleaved(all.size());
          for (std::size_t p = 0; p < w; ++p) {
            for (std::size_t i = 0; i < want_samples; ++i) interleaved[i * w + p] = all[p * want_samples + i];
          }
          const std::vector<std::size_t> order = sampler.epoch_order();
          f.expect(std::vector<std::uint64_t>(order.begin(), order.end()) == interleaved,
                   where + ": the ranks' slices do not interleave into one epoch order");
          std::vector<std::uint64_t> sorted = interleaved;
          std::sort(sorted.begin(), sorted.end());
          const bool distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
          const bool covers = std::unique(sorted.begin(), sorted.end()) - sorted.begin() == static_cast<std::ptrdiff_t>(size);
          f.expect(drop_last ? distinct : covers, where + (drop_last ? ": repeated indices" : ": indices missing"));
        }
      }
    }
  }
  return f.take();
}

// Sub-communicators per mesh dimension hold exactly the ranks Mesh lists, ranked by coordinate.
template <class Comm>
std::vector<std::string> check_mesh_comms(Comm& world) {
  static_assert(chorus::is_communicator_v<Comm>, "mesh checks run on chorus communicators");
  Failures f;
  const int n = world.size(), r = world.rank();
  const int tp = n % 2 == 0 ? 2 : 1;
  const int pp = (n / tp) % 2 == 0 ? 2 : 1;
  par::MeshComms<Comm> comms(world, par::Mesh::megatron(n, tp, pp));
  const par::Mesh& mesh = comms.mesh();
  for (const char* dim : {"tp", "dp", "pp"}) {
    Comm& sub = comms[dim];
    const std::vector<int> group = mesh.group_of(r, dim);
    f.expect(sub.size() == mesh.size(dim) && sub.rank() == mesh.coordinate(r, dim),
             concat(dim, " communicator on rank ", r, ": size ", sub.size(), " rank ", sub.rank()));
    std::vector<std::int32_t> members(group.size(), -1);
    const std::int32_t me = r;
    if (sub.size() == static_cast<int>(group.size())) sub.all_gather(&me, members.data(), 1);
    f.expect(members == std::vector<std::int32_t>(group.begin(), group.end()),
             concat(dim, " group of rank ", r, " holds ", show(members), ", the mesh lists ", show(group)));
    std::int32_t sum = r;
    sub.all_reduce(&sum, &sum, 1, ReduceOp::sum);
    std::int32_t want = 0;
    for (int member : group) want += member;
    f.expect(sum == want, concat("all_reduce on the ", dim, " communicator of rank ", r, " summed ", sum));
  }
  return f.take();
}

}  // namespace dp_checks
