// The model examples 03, 07 and 17 train: a tiny MLP, y = w2 . tanh(w1 x + b1) + b2, on a made-up
// regression task, with data parallelism written once for any chorus communicator. Not an example
// on its own; see 03 (host threads), 07 (MPI processes) and 17 (processes over shared memory).
#pragma once

#include <chorus/core/communicator.hpp>
#include <chorus/host.hpp>
#include <chorus/parallel/broadcast_parameters.hpp>
#include <chorus/parallel/distributed_sampler.hpp>
#include <chorus/parallel/gradient_reducer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

namespace example_mlp {

constexpr std::size_t kHidden = 16, kDataset = 256, kGlobalBatch = 32;
constexpr int kSteps = 20;
constexpr float kLr = 0.2f;

// Sample i: x in [-1, 1]^2, target sin(2 x0) * x1.
float input(std::size_t i, int j) { return std::sin(static_cast<float>(i * 7 + static_cast<std::size_t>(j) * 13)); }
float target(std::size_t i) { return std::sin(2 * input(i, 0)) * input(i, 1); }

struct Mlp {  // y = w2 . tanh(w1 x + b1) + b2
  std::vector<float> w1, b1, w2, b2;
  std::vector<float> g_w1, g_b1, g_w2, g_b2;

  explicit Mlp(int seed) : w1(2 * kHidden), b1(kHidden), w2(kHidden), b2(1) {
    std::uint32_t state = 12345u + static_cast<std::uint32_t>(seed);  // a different start on every rank
    auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    };
    for (auto* tensor : {&w1, &b1, &w2, &b2}) {
      for (float& v : *tensor) v = next();
    }
    g_w1 = std::vector<float>(w1.size()), g_b1 = std::vector<float>(b1.size());
    g_w2 = std::vector<float>(w2.size()), g_b2 = std::vector<float>(b2.size());
  }
  // Registration order; gradients become ready in reverse (the output layer first).
  std::vector<chorus::parallel::ParamView> params() {
    using chorus::parallel::param_view;
    return {param_view("w1", w1), param_view("b1", b1), param_view("w2", w2), param_view("b2", b2)};
  }
  std::vector<chorus::parallel::ParamView> grads() {
    using chorus::parallel::param_view;
    return {param_view("w1.grad", g_w1), param_view("b1.grad", g_b1), param_view("w2.grad", g_w2),
            param_view("b2.grad", g_b2)};
  }
};

// One step on this rank's samples: forward, backward with mark_ready, finish, SGD. Returns the
// rank's mean loss.
template <class Comm>
float train_step(Mlp& m, chorus::parallel::GradientReducer<Comm>& reducer, const std::vector<std::size_t>& batch) {
  const auto n = static_cast<float>(batch.size());
  std::vector<std::vector<float>> hidden;
  std::vector<float> dy;
  float loss = 0;
  for (std::size_t s : batch) {
    std::vector<float> h(kHidden);
    float y = m.b2[0];
    for (std::size_t k = 0; k < kHidden; ++k) {
      h[k] = std::tanh(m.w1[2 * k] * input(s, 0) + m.w1[2 * k + 1] * input(s, 1) + m.b1[k]);
      y += m.w2[k] * h[k];
    }
    loss += 0.5f * (y - target(s)) * (y - target(s)) / n;
    dy.push_back((y - target(s)) / n);
    hidden.push_back(h);
  }
  // Output layer first: its bucket starts its all-reduce while the hidden layer's gradients are computed.
  for (auto* g : {&m.g_w1, &m.g_b1, &m.g_w2, &m.g_b2}) std::fill(g->begin(), g->end(), 0.0f);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    m.g_b2[0] += dy[i];
    for (std::size_t k = 0; k < kHidden; ++k) m.g_w2[k] += dy[i] * hidden[i][k];
  }
  reducer.mark_ready(3);
  reducer.mark_ready(2);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    for (std::size_t k = 0; k < kHidden; ++k) {
      const float dz = dy[i] * m.w2[k] * (1 - hidden[i][k] * hidden[i][k]);
      m.g_b1[k] += dz;
      m.g_w1[2 * k] += dz * input(batch[i], 0);
      m.g_w1[2 * k + 1] += dz * input(batch[i], 1);
    }
  }
  reducer.mark_ready(1);
  reducer.mark_ready(0);
  reducer.finish();  // the gradients now hold the average over ranks
  for (auto [p, g] : {std::pair{&m.w1, &m.g_w1}, {&m.b1, &m.g_b1}, {&m.w2, &m.g_w2}, {&m.b2, &m.g_b2}}) {
    for (std::size_t i = 0; i < p->size(); ++i) (*p)[i] -= kLr * (*g)[i];
  }
  return loss;
}

// Trains with kGlobalBatch / comm.size() samples per rank (the size must divide it); returns the
// loss per step, averaged over ranks, on every rank.
template <class Comm>
std::vector<float> train_data_parallel(Comm& comm) {
  static_assert(chorus::is_communicator_v<Comm>, "train_data_parallel runs on any chorus communicator");
  std::vector<float> losses(kSteps);
  Mlp model(comm.rank());
  chorus::parallel::broadcast_parameters(comm, model.params());  // everyone starts from rank 0's weights
  chorus::parallel::ReducerOptions options;
  options.buckets.first_bucket_bytes = (kHidden + 1) * sizeof(float);  // bucket 0: the output layer
  chorus::parallel::GradientReducer<Comm> reducer(comm, model.grads(), options);
  if (comm.rank() == 0 && comm.size() > 1) {
    std::printf("%zu gradient buckets, launched in this order:", reducer.plan().buckets.size());
    for (const auto& bucket : reducer.plan().buckets) {
      std::printf(" {");
      for (std::size_t t : bucket.tensors) std::printf(" %s", model.params()[t].name.c_str());
      std::printf(" }");
    }
    std::printf("\n");
  }
  auto sampler = chorus::parallel::make_distributed_sampler(comm, kDataset, {true, 2017, false});
  const std::size_t batch = kGlobalBatch / static_cast<std::size_t>(comm.size());
  const std::size_t steps_per_epoch = sampler.num_samples() / batch;
  std::vector<std::size_t> mine;
  for (int step = 0; step < kSteps; ++step) {
    const std::size_t in_epoch = static_cast<std::size_t>(step) % steps_per_epoch;
    if (in_epoch == 0) {
      sampler.set_epoch(static_cast<std::uint64_t>(step) / steps_per_epoch);  // reshuffle every epoch
      mine = sampler.indices();
    }
    const std::vector<std::size_t> local(mine.begin() + static_cast<std::ptrdiff_t>(in_epoch * batch),
                                         mine.begin() + static_cast<std::ptrdiff_t>((in_epoch + 1) * batch));
    float loss = train_step(model, reducer, local);
    comm.all_reduce(&loss, &loss, 1, chorus::ReduceOp::avg);  // the comm is ours again after finish()
    losses[static_cast<std::size_t>(step)] = loss;
  }
  return losses;
}

// Trains the same model on one host thread with the whole batch, prints its loss curve beside `split`
// (the curve of `processes` ranks), and says whether they agree to float rounding: data parallelism
// across processes is still the big batch, split. Examples 07 and 17 call it on rank 0.
inline bool matches_whole_batch(const std::vector<float>& split, int processes) {
  std::vector<float> whole;
  chorus::host::Team alone(1);
  alone.run([&](chorus::host::Comm& local) { whole = train_data_parallel(local); });
  std::printf("step   %d processes x %zu samples   1 rank x %zu samples\n", processes,
              kGlobalBatch / static_cast<std::size_t>(processes), kGlobalBatch);
  bool same = true;
  for (int s = 0; s < kSteps; ++s) {
    const float a = split[static_cast<std::size_t>(s)], b = whole[static_cast<std::size_t>(s)];
    std::printf("%4d   %23.6f   %19.6f\n", s, static_cast<double>(a), static_cast<double>(b));
    same = same && std::fabs(a - b) <= 1e-5f * std::fmax(1.0f, std::fabs(b));
  }
  std::printf(same ? "the loss curves agree across processes\n" : "WRONG: the loss curves differ\n");
  return same;
}

}  // namespace example_mlp
