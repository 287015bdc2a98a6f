// Data parallelism with the gradients in device memory: DeviceGradientReducer over the CPU twin device's
// communicators trains the model of the host checks (tests/support/data_parallel_checks.hpp: a linear
// model, float32 weights and float64 bias, mean loss, DistributedSampler batches) and must take the same
// SGD steps as one rank with the whole batch, as check_dp_equals_large_batch requires of GradientReducer.
// A training loop on a GPU does this: parameters broadcast through the device communicator, backward writes
// the gradients into device memory, the reducer averages them on its comm stream, the optimizer reads them.
// Here the host computes the gradients and copies them into the twin's memory, as a backward kernel would
// write them; a gradient accumulated over no_sync micro-batches must give the same step.
#include <catch2/catch.hpp>

#include <chorus/cuda/twin/twin_comm.hpp>
#include <chorus/parallel/device_gradient_reducer.hpp>

#include "support/data_parallel_checks.hpp"
#include "support/run_on_every_communicator.hpp"
#include "support/scoped_env.hpp"

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace test_device_data_parallel {

using chorus::DataType;
using chorus::cuda::TwinDevice;
using chorus::cuda::twin::RankComm;
using chorus::cuda::twin::Stream;
using chorus::cuda::twin::Team;
using chorus::detail::concat;
using chorus::parallel::DeviceGradientReducer;
using chorus::parallel::DistributedSampler;
using chorus::parallel::FinishWait;
using chorus::parallel::ParamView;
using chorus::parallel::ReducerOptions;
using dp_checks::Linear;
using Reducer = DeviceGradientReducer<RankComm, TwinDevice>;

namespace {

constexpr const char* kCall = "test_device_data_parallel";

// A buffer of device memory on one twin GPU, copied to and from host vectors (cudaMemcpy's role).
template <class T>
class DeviceVector {
 public:
  DeviceVector(const TwinDevice& device, std::size_t n, int rank)
      : device_(device), n_(n), rank_(rank), data_(static_cast<T*>(device.allocate(n * sizeof(T), kCall, rank))) {}
  ~DeviceVector() { device_.free(data_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  T* data() const { return data_; }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& from) { device_.copy(data_, from.data(), n_ * sizeof(T), kCall, rank_); }
  void download(std::vector<T>& to) const { device_.copy(to.data(), data_, n_ * sizeof(T), kCall, rank_); }

 private:
  TwinDevice device_;
  std::size_t n_;
  int rank_;
  T* data_;
};

// One rank's model with its parameters' and gradients' device copies.
struct DeviceModel {
  DeviceModel(const TwinDevice& device, int rank)
      : w(device, dp_checks::kOut * dp_checks::kIn, rank), b(device, dp_checks::kOut, rank),
        gw(device, dp_checks::kOut * dp_checks::kIn, rank), gb(device, dp_checks::kOut, rank) {}
  DeviceVector<float> w;
  DeviceVector<double> b;
  DeviceVector<float> gw;
  DeviceVector<double> gb;
  std::vector<ParamView> grads() const {
    return {{"w.grad", DataType::float32, gw.data(), gw.size()}, {"b.grad", DataType::float64, gb.data(), gb.size()}};
  }
};

// Rank r's part of the test: `micro` micro-batches of kBatch samples per optimizer step, all but the last
// under no_sync. Returns what this rank found wrong.
std::vector<std::string> train(RankComm& comm, int micro) {
  dp_checks::Failures f;
  const int n = comm.size(), r = comm.rank();
  constexpr std::size_t kBatch = 3;
  constexpr double kLr = 0.05;
  const TwinDevice device(r);
  Stream compute, comm_stream;
  RankComm on_stream = comm.on(&comm_stream);
  Linear dp = dp_checks::initial_model(r), single = dp_checks::initial_model(0);
  DeviceModel d(device, r);

  // Rank 0's parameters to every rank through the device communicator (broadcast_parameters is the host's).
  d.w.upload(dp.w);
  d.b.upload(dp.b);
  on_stream.broadcast(d.w.data(), d.w.data(), d.w.size(), 0);
  on_stream.broadcast(d.b.data(), d.b.data(), d.b.size(), 0);
  on_stream.wait();
  d.w.download(dp.w);
  d.b.download(dp.b);
  f.expect(dp.w == single.w && dp.b == single.b, concat("broadcast: rank ", r, " differs from rank 0"));

  Reducer reducer(on_stream, device, d.grads(), &compute);
  const std::size_t per_step = kBatch * static_cast<std::size_t>(micro), global = per_step * static_cast<std::size_t>(n);
  DistributedSampler sampler(4 * global, n, r, {true, 7, false});
  for (std::uint64_t step = 0; step < 3; ++step) {
    sampler.set_epoch(step);
    const std::vector<std::size_t> order = sampler.epoch_order(), mine = sampler.indices();
    std::vector<float> sum_w(dp.gw.size(), 0.0f);
    std::vector<double> sum_b(dp.gb.size(), 0.0);
    for (int m = 0; m < micro; ++m) {
      const bool last = m == micro - 1;
      const auto first = mine.begin() + static_cast<std::ptrdiff_t>(kBatch * static_cast<std::size_t>(m));
      dp_checks::backward(dp, std::vector<std::size_t>(first, first + kBatch), true);
      // The accumulated gradient (mean over the samples of the micro-batches so far, as dividing the loss by
      // `micro` gives) is what backward leaves in device memory.
      for (std::size_t i = 0; i < sum_w.size(); ++i) sum_w[i] += dp.gw[i] / static_cast<float>(micro);
      for (std::size_t k = 0; k < sum_b.size(); ++k) sum_b[k] += dp.gb[k] / micro;
      d.gw.upload(sum_w);
      d.gb.upload(sum_b);
      {
        std::optional<Reducer::NoSync> guard;
        if (!last) guard.emplace(reducer);  // reducer.no_sync(), for this micro-batch only
        reducer.mark_ready(1);              // backward order: b, then w
        reducer.mark_ready(0);
        reducer.finish(FinishWait::host);
      }
      if (!last) {  // a no_sync iteration leaves the local sums in place
        std::vector<float> held(sum_w.size());
        d.gw.download(held);
        f.expect(held == sum_w, concat("step ", step, " micro ", m, ": a no_sync iteration changed the gradient"));
      }
    }
    d.gw.download(dp.gw);  // the optimizer reads the reduced gradients
    d.gb.download(dp.gb);
    dp_checks::sgd_step(dp, kLr);
    std::vector<std::size_t> everyone(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(global));
    dp_checks::backward(single, everyone, true);
    dp_checks::sgd_step(single, kLr);
    f.expect(dp_checks::close(dp.w, single.w, 1e-6) && dp_checks::close(dp.b, single.b, 1e-6),
             concat("step ", step, ": data parallel on device, rank ", r, " of ", n, ", ", micro,
                    " micro-batches, gives w ", dp_checks::show(dp.w), " b ", dp_checks::show(dp.b),
                    ", one rank with the whole batch w ", dp_checks::show(single.w), " b ", dp_checks::show(single.b)));
  }
  return f.take();
}

// A twin team of n ranks, each on a twin GPU of its own (devices 0..n-1), with small kernels.
Team twin_gpus(int n) {
  std::vector<int> devices;
  for (int g = 0; g < n; ++g) devices.push_back(g);
  chorus::cuda::twin::Options options;
  options.blocks = 1;
  options.threads = 2;
  return Team(devices, options);
}

// Runs train on n ranks of a twin team, each rank on a thread of its own.
std::vector<std::vector<std::string>> train_on(int n, int micro) {
  Team team = twin_gpus(n);
  std::vector<std::vector<std::string>> found(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        RankComm comm = team.comm(r);
        found[static_cast<std::size_t>(r)] = train(comm, micro);
      } catch (const std::exception& e) {
        found[static_cast<std::size_t>(r)].push_back(std::string("threw: ") + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return found;
}

}  // namespace

TEST_CASE("Data parallel on device memory: N twin ranks x batch B equal one rank with batch N*B",
          "[parallel][data_parallel][device]") {
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "20000");
  for (const int n : {1, 2, 3, 4}) {
    for (const int micro : {1, 3}) {  // 3: two no_sync micro-batches, then a synced one
      support::expect_no_failures(concat("twin, ", n, " ranks, ", micro, " micro-batches per step"), train_on(n, micro));
    }
  }
}


TEST_CASE("Data parallel on device memory: a rank that never reduces releases its peer with an error naming it",
          "[parallel][data_parallel][device]") {
  // Rank 1 fails before its backward; rank 0's bucket all-reduce cannot start. On a team communicator the
  // all-reduce meets its peers when it is enqueued, so mark_ready reports the missing rank within
  // CHORUS_TIMEOUT_MS, and the reducer refuses further use (the ranks' call sequences have diverged).
  const support::ScopedEnv bound("CHORUS_TIMEOUT_MS", "1000");
  Team team = twin_gpus(2);
  std::vector<std::string> seen;
  {
    RankComm comm = team.comm(0);
    const TwinDevice device(0);
    Stream compute, comm_stream;
    RankComm on_stream = comm.on(&comm_stream);
    DeviceModel d(device, 0);
    ReducerOptions no_check;
    no_check.verify_shapes = false;  // rank 1 is not there to compare shapes with
    Reducer reducer(on_stream, device, d.grads(), &compute, no_check);
    for (const auto& step : std::vector<std::function<void()>>{[&] { reducer.mark_ready(1); },
                                                               [&] { reducer.mark_ready(0); },
                                                               [&] { reducer.finish(FinishWait::host); }}) {
      try {
        step();
      } catch (const chorus::Error& e) {
        seen.push_back(e.what());
      }
    }
  }
  // b (float64) and w (float32) are buckets of their own: marking b launches the first all-reduce.
  REQUIRE(seen.size() == 3);
  CHECK_THAT(seen[0], Catch::Matchers::Contains("all_reduce on rank 0: rank(s) 1 never made call 0"));
  const std::vector<std::pair<std::size_t, std::string>> refusals = {
      {1, "DeviceGradientReducer::mark_ready on rank 0"}, {2, "DeviceGradientReducer::finish on rank 0"}};
  for (const auto& [index, call] : refusals) {
    CHECK_THAT(seen[index], Catch::Matchers::Contains(call) && Catch::Matchers::Contains("unusable after an earlier error") &&
                                Catch::Matchers::Contains("rank(s) 1 never made call 0"));
  }
}

}  // namespace test_device_data_parallel
