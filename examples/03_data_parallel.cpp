// Example 03: data parallelism is a bigger batch, split.
//
// Four ranks each take 8 samples, compute gradients of their mean loss, and average them; every
// rank then takes the same SGD step. That is exactly one rank taking the step on all 32 samples:
// the mean of four means of 8 is the mean of 32. This example trains a tiny MLP both ways and
// prints the two loss curves side by side; they agree to float rounding.
//
// The pieces, all templates over any chorus communicator (docs/data-parallel.md), used in
// example_mlp.hpp:
//   DistributedSampler    which samples each rank reads (PyTorch's strided split, reshuffled per epoch)
//   broadcast_parameters  every rank starts from rank 0's weights
//   GradientReducer       buckets of gradients, all-reduced in order on a communication thread
//                         while backward continues: mark_ready(tensor) as each gradient is done,
//                         finish() before the optimizer step.
#include <chorus/host.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "example_mlp.hpp"

namespace {

// Trains on `ranks` host threads; returns the loss curve.
std::vector<float> train(int ranks) {
  std::vector<float> losses;
  chorus::host::Team team(ranks);
  team.run([&](chorus::host::Comm& comm) {
    std::vector<float> mine = example_mlp::train_data_parallel(comm);
    if (comm.rank() == 0) losses = mine;
  });
  return losses;
}

}  // namespace

int main() {
  using example_mlp::kSteps;
  const std::vector<float> split = train(4), whole = train(1);
  std::printf("step   4 ranks x 8 samples   1 rank x 32 samples\n");
  bool same = true;
  for (int s = 0; s < kSteps; ++s) {
    const float a = split[static_cast<std::size_t>(s)], b = whole[static_cast<std::size_t>(s)];
    std::printf("%4d   %19.6f   %19.6f\n", s, static_cast<double>(a), static_cast<double>(b));
    same = same && std::fabs(a - b) <= 1e-5f * std::fmax(1.0f, std::fabs(b));
  }
  std::printf(same ? "the loss curves agree: data parallelism is the big batch, split\n"
                   : "WRONG: the loss curves differ\n");
  return same ? 0 : 1;
}
