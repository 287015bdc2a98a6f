// Streams, as a GPU has them, watched on the CPU: the CUDA kernels' twin is an asynchronous device whose
// streams are worker threads (docs/device.md). A call returns before its kernel runs; the result is there
// after synchronize(); a team orders its own work across two streams; and work captured into a graph runs
// when the graph is launched. The same code, over CudaDevice, is cuda::Team on GPUs.
#include <chorus/cuda/twin/twin_team.hpp>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using chorus::Algorithm;
using chorus::ReduceOp;

namespace {

// Rank r's buffer holds r + 1 everywhere; after a sum all_reduce every element is n (n + 1) / 2.
struct Buffers {
  std::vector<std::vector<float>> data;
  std::vector<const float*> in;
  std::vector<float*> out;
  Buffers(int ranks, std::size_t count) {
    for (int r = 0; r < ranks; ++r) data.emplace_back(count, static_cast<float>(r + 1));
    for (auto& d : data) {
      in.push_back(d.data());
      out.push_back(d.data());  // in place
    }
  }
  float first() const { return data.back().front(); }
};

}  // namespace

int main() {
  const int ranks = 4;
  chorus::cuda::twin::Team team(ranks);
  chorus::cuda::twin::Stream compute, communicate;  // two worker threads

  // 1. Asynchronous: the stream is busy for 100 ms (the "compute" before the call), so right after the
  //    call nothing has run yet.
  Buffers a(ranks, 1000);
  compute.enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); });
  team.all_reduce(a.in, a.out, 1000, ReduceOp::sum, Algorithm::ring, {&compute});
  std::printf("right after the call:  %.0f (rank 3's own input: the kernel has not run)\n", static_cast<double>(a.first()));
  team.synchronize();
  std::printf("after synchronize():   %.0f (expected 10)\n", static_cast<double>(a.first()));

  // 2. Two streams, no user synchronisation: the team makes each launch wait for its previous one, so the
  //    calls never share the kernels' counters and staging at once.
  Buffers b(ranks, 5000), c(ranks, 300);
  team.all_reduce(b.in, b.out, 5000, ReduceOp::sum, Algorithm::two_shot, {&compute});
  team.all_reduce(c.in, c.out, 300, ReduceOp::sum, Algorithm::one_shot, {&communicate});
  team.synchronize();
  std::printf("two streams:           %.0f and %.0f (expected 10 and 10)\n", static_cast<double>(b.first()),
              static_cast<double>(c.first()));

  // 3. Capture: the call is recorded into a graph, not run; launching the graph runs it. A graph's replays
  //    are waited for on the stream they run on (cudaStreamSynchronize; here an event recorded after the
  //    launch): team.synchronize() waits for the team's eager calls only, as on a GPU (docs/device.md).
  Buffers d(ranks, 64);
  communicate.begin_capture();
  team.all_reduce(d.in, d.out, 64, ReduceOp::sum, Algorithm::automatic, {&communicate});
  const chorus::cuda::twin::Graph graph = communicate.end_capture();
  std::printf("captured, not run:     %.0f\n", static_cast<double>(d.first()));
  communicate.launch(graph);
  chorus::cuda::twin::Event replayed;
  communicate.record(replayed);
  if (!replayed.wait_reached(replayed.last_mark(), std::chrono::steady_clock::now() + std::chrono::seconds(30))) return 1;
  std::printf("graph launched:        %.0f (expected 10)\n", static_cast<double>(d.first()));

  const bool ok = a.first() == 10.0f && b.first() == 10.0f && c.first() == 10.0f && d.first() == 10.0f;
  return ok ? 0 : 1;
}
