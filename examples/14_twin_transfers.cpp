// Point-to-point transfers as one call: a pipeline of 4 stages where, at every tick, each stage hands
// its activations to the next stage while it receives the previous stage's, the exchange a pipeline-
// parallel step does. One transfer call carries every rank's sends and receives at once, so no stage waits
// for its neighbour to post its half first. Run on the CUDA kernels' CPU twin (the same kernel body
// cuda::Team launches on GPUs), so this runs anywhere; then the same data as an all_to_all, pairwise.
// The twin is asynchronous like a GPU: a call only enqueues its launch on a stream (here the twin device's
// default one), and the data may be read after synchronize().
#include <chorus/cuda/twin/twin_team.hpp>

#include <cstdio>
#include <vector>

int main() {
  using chorus::cuda::Transfer;
  const int stages = 4;
  const std::size_t count = 1000;  // activations per micro-batch
  chorus::cuda::twin::Team team(stages);

  // held[s]: what stage s holds now; stage s "computes" by adding s + 1 before handing it on.
  std::vector<std::vector<float>> held(stages, std::vector<float>(count, 0.0f)), incoming = held;
  for (int tick = 0; tick < stages - 1; ++tick) {
    for (int s = 0; s < stages; ++s) {
      for (float& x : held[static_cast<std::size_t>(s)]) x += static_cast<float>(s + 1);
    }
    std::vector<Transfer<float>> hand_on;  // i -> i+1 only: stage 0 receives nothing, the last sends nothing
    for (int s = 0; s + 1 < stages; ++s) {
      hand_on.push_back({s, s + 1, held[static_cast<std::size_t>(s)].data(), incoming[static_cast<std::size_t>(s + 1)].data(), count});
    }
    team.transfer(hand_on);
    team.synchronize();  // the transfer ran: incoming holds the neighbours' activations
    for (int s = 1; s < stages; ++s) held[static_cast<std::size_t>(s)] = incoming[static_cast<std::size_t>(s)];
    held[0].assign(count, 0.0f);  // stage 0 starts a new micro-batch
  }
  // After stages - 1 ticks the first micro-batch reached the last stage having passed stages 0..2: 1+2+3.
  std::printf("last stage holds %.1f (expected 6.0)\n", static_cast<double>(held[stages - 1][0]));

  // all_to_all, pairwise: every pair's block moved by the same point-to-point kernel in one launch.
  std::vector<std::vector<float>> in(stages, std::vector<float>(stages * 3)), out = in;
  std::vector<const float*> ins;
  std::vector<float*> outs;
  for (int r = 0; r < stages; ++r) {
    for (std::size_t i = 0; i < in[static_cast<std::size_t>(r)].size(); ++i) in[static_cast<std::size_t>(r)][i] = static_cast<float>(10 * r) + static_cast<float>(i / 3);
    ins.push_back(in[static_cast<std::size_t>(r)].data());
    outs.push_back(out[static_cast<std::size_t>(r)].data());
  }
  team.all_to_all<float>(ins, outs, 3, chorus::Algorithm::pairwise);
  team.synchronize();
  // Rank 1's block from rank 2 is rank 2's block 1: 10 * 2 + 1.
  std::printf("all_to_all: rank 1 got %.1f from rank 2 (expected 21.0)\n", static_cast<double>(out[1][2 * 3]));
  return held[stages - 1][0] == 6.0f && out[1][2 * 3] == 21.0f ? 0 : 1;
}
