// Example 08: ZeRO-1 shards the optimizer state, not the answer.
//
// Plain data parallelism keeps a full copy of the optimizer state on every rank: for Adam two
// floats (m and v) per parameter, more than the parameters themselves. ZeRO stage 1 gives each of
// the N ranks the state of 1/N of the parameters. A step is
//   reduce_scatter(gradients / N)   rank r receives the averaged gradients of its shard
//   Adam on the shard               only rank r keeps m and v for those elements
//   all_gather(parameters)          every rank receives every updated shard
// Reduce-scatter + all-gather move exactly the bytes of the all-reduce plain data parallelism
// uses (2 Psi (N-1)/N per rank with a ring), so the memory comes free in communication, and the
// parameters after every step are those of plain data parallelism.
//
// Four host ranks train a small linear model both ways from the same start on the same data. The
// example prints each rank's optimizer state and the parameters after the steps, and exits
// non-zero if ZeRO-1's parameters differ from plain data parallelism's (docs/data-parallel.md).
#include <chorus/host.hpp>
#include <chorus/parallel/adam.hpp>
#include <chorus/parallel/param_view.hpp>
#include <chorus/parallel/zero_redundancy_optimizer.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

namespace {

using namespace chorus::parallel;

constexpr int kRanks = 4, kSteps = 5, kSamples = 8;  // samples per rank
constexpr std::size_t kIn = 8, kOut = 4;
constexpr std::size_t kParams = kOut * kIn + kOut;   // W [out x in] then b [out], end to end

float input(int rank, int sample, std::size_t j) {
  return std::sin(static_cast<float>(rank * 97 + sample * 13) + static_cast<float>(j) * 0.7f);
}
float target(int rank, int sample, std::size_t i) { return std::cos(static_cast<float>(rank * 31 + sample * 7 + static_cast<int>(i))); }

// This rank's gradient of its mean loss 0.5 |W x + b - target|^2 over its samples.
void gradient(const std::vector<float>& p, int rank, std::vector<float>& g) {
  std::fill(g.begin(), g.end(), 0.0f);
  for (int s = 0; s < kSamples; ++s) {
    for (std::size_t i = 0; i < kOut; ++i) {
      float y = p[kOut * kIn + i];
      for (std::size_t j = 0; j < kIn; ++j) y += p[i * kIn + j] * input(rank, s, j);
      const float dy = (y - target(rank, s, i)) / kSamples;
      for (std::size_t j = 0; j < kIn; ++j) g[i * kIn + j] += dy * input(rank, s, j);
      g[kOut * kIn + i] += dy;
    }
  }
}

}  // namespace

int main() {
  const AdamOptions adam{/*lr*/ 0.05, 0.9, 0.999, 1e-8, 0.0};
  std::vector<float> start(kParams);
  for (std::size_t i = 0; i < kParams; ++i) start[i] = 0.1f * std::sin(static_cast<float>(i));

  std::vector<std::vector<float>> dp_result(kRanks), zero_result(kRanks);
  std::vector<std::size_t> dp_state(kRanks), zero_state(kRanks), shard_begin(kRanks);
  chorus::host::Team team(kRanks);
  team.run([&](chorus::host::Comm& comm) {
    const int r = comm.rank();
    const auto n = static_cast<float>(comm.size());
    // Plain data parallelism: average the gradients with one all-reduce, Adam on everything.
    std::vector<float> dp = start, dp_grad(kParams);
    Adam dp_adam(adam);
    // ZeRO-1: the same model, the optimizer sharded.
    std::vector<float> zp = start, zero_grad(kParams);
    ZeroRedundancyOptimizer<chorus::host::Comm, Adam> zero(
        comm, {param_view("W", zp.data(), kOut * kIn), param_view("b", zp.data() + kOut * kIn, kOut)},
        {param_view("W.grad", zero_grad.data(), kOut * kIn), param_view("b.grad", zero_grad.data() + kOut * kIn, kOut)},
        Adam(adam));
    for (int step = 0; step < kSteps; ++step) {
      gradient(dp, r, dp_grad);
      for (float& g : dp_grad) g /= n;  // as DDP and ZeRO do: divide, then sum
      comm.all_reduce(dp_grad.data(), dp_grad.data(), kParams, chorus::ReduceOp::sum);
      dp_adam.step(dp.data(), dp_grad.data(), kParams);

      gradient(zp, r, zero_grad);
      zero.step();  // reduce_scatter, Adam on this rank's shard, all_gather
    }
    const auto i = static_cast<std::size_t>(r);
    dp_result[i] = dp;
    zero_result[i] = zp;
    dp_state[i] = dp_adam.state_elements();
    zero_state[i] = zero.optimizer().state_elements();
    shard_begin[i] = zero.shard_offset();
  });

  std::printf("%d ranks, %zu parameters, Adam (m and v: 2 floats per parameter it updates)\n\n", kRanks, kParams);
  std::printf("rank   plain DP optimizer state   ZeRO-1 optimizer state   ZeRO-1 shard\n");
  bool ok = true;
  for (std::size_t r = 0; r < kRanks; ++r) {
    const std::size_t shard = zero_state[r] / 2;
    std::printf("%4zu   %8zu floats (%4zu B)    %7zu floats (%4zu B)   elements [%zu, %zu)\n", r, dp_state[r],
                dp_state[r] * sizeof(float), zero_state[r], zero_state[r] * sizeof(float), shard_begin[r],
                shard_begin[r] + shard);
    ok = ok && dp_state[r] == 2 * kParams && zero_state[r] * kRanks == dp_state[r];
  }
  const double ring = 2.0 * (kRanks - 1) / kRanks * kParams * sizeof(float);
  std::printf("\nbytes each rank sends per step (ring): plain DP all-reduce %.0f B, ZeRO-1 reduce-scatter %.0f B"
              " + all-gather %.0f B = %.0f B\n\n", ring, ring / 2, ring / 2, ring);

  std::printf("parameters after %d steps (rank 0; the other ranks hold the same)\n", kSteps);
  std::printf("index   plain DP      ZeRO-1\n");
  double max_diff = 0;
  for (std::size_t i = 0; i < kParams; ++i) {
    const float a = dp_result[0][i], b = zero_result[0][i];
    if (i % 4 == 0 || i >= kOut * kIn) {
      std::printf("%5zu %s %10.6f  %10.6f\n", i, i < kOut * kIn ? "W" : "b", static_cast<double>(a),
                  static_cast<double>(b));
    }
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a) - b));
    ok = ok && std::fabs(a - b) <= 1e-6f * std::fmax(1.0f, std::fabs(a));
    for (std::size_t r = 1; r < kRanks; ++r) ok = ok && zero_result[r][i] == zero_result[0][i] && dp_result[r][i] == a;
  }
  std::printf("largest difference %.3g\n", max_diff);
  std::printf(ok ? "ZeRO-1 holds 1/%d of the optimizer state and trains exactly like plain data parallelism\n"
                 : "WRONG: ZeRO-1 differs from plain data parallelism (or its state is not 1/%d)\n",
              kRanks);
  return ok ? 0 : 1;
}
