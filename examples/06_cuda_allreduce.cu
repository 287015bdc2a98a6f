// Example 06: chorus's own GPU all-reduce kernels, and how to watch them without a GPU.
//
// With GPUs: one rank per visible GPU (or, with one GPU, 4 virtual ranks on it), each of the four kernels
// (LL one-shot, barrier one-shot, two-shot, Simple ring) run and timed with CUDA events, and the result
// checked. Without a GPU: the very same kernel bodies run on the CPU twin (a thread per GPU lane), so the
// algorithms can still be followed on a laptop — and they must give the same bits on every rank.
//
// Then the same team through per-rank views, the way per-rank code (one thread per GPU, as in data-parallel
// training) uses it: each thread calls team.comm(rank).on(stream).all_reduce(...) with its own buffer; the
// calls meet at the team's rendezvous and the last to arrive launches the kernels for all.
//
//   06_cuda_allreduce [count]
#include <chorus/cuda.hpp>
#include <chorus/cuda/twin/twin_team.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using chorus::ReduceOp;
using chorus::cuda::kernel::KernelAlgorithm;

namespace {

const KernelAlgorithm kAlgorithms[] = {KernelAlgorithm::ll_one_shot, KernelAlgorithm::one_shot, KernelAlgorithm::two_shot,
                                       KernelAlgorithm::ring};

// Rank r contributes r + 1 everywhere, so every element must sum to n (n + 1) / 2 (exact in float).
bool on_the_cpu_twin(int ranks, std::size_t count) {
  std::printf("no GPU visible: running the kernels on the CPU twin (%d ranks, %zu floats)\n", ranks, count);
  chorus::cuda::twin::Team team(ranks);
  std::vector<std::vector<float>> data(static_cast<std::size_t>(ranks));
  std::vector<const float*> in;
  std::vector<float*> out;
  for (int r = 0; r < ranks; ++r) {
    data[static_cast<std::size_t>(r)].assign(count, static_cast<float>(r + 1));
  }
  bool ok = true;
  for (KernelAlgorithm algorithm : kAlgorithms) {
    in.clear();
    out.clear();
    for (int r = 0; r < ranks; ++r) {
      data[static_cast<std::size_t>(r)].assign(count, static_cast<float>(r + 1));
      in.push_back(data[static_cast<std::size_t>(r)].data());
      out.push_back(data[static_cast<std::size_t>(r)].data());  // in place
    }
    team.all_reduce_with<float>(in, out, count, ReduceOp::sum, algorithm);
    team.synchronize();  // the twin is asynchronous, as a GPU: read after the wait
    const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
    bool right = true;
    for (const auto& rank : data) {
      for (float v : rank) right = right && v == expected;
    }
    std::printf("  %-12s every rank holds %g everywhere: %s\n", to_string(algorithm), expected, right ? "yes" : "NO");
    ok = ok && right;
  }
  return ok;
}

// One thread per rank, each with its own communicator: `make_call(rank)` does that rank's all_reduce.
template <class Call>
bool one_thread_per_rank(int ranks, Call make_call) {
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        make_call(r);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  bool ok = true;
  for (const std::string& error : errors) {
    if (!error.empty()) std::printf("  %s\n", error.c_str());
    ok = ok && error.empty();
  }
  return ok;
}

bool per_rank_views_on_the_twin(int ranks, std::size_t count) {
  chorus::cuda::twin::Team team(ranks);
  std::vector<std::vector<float>> data(static_cast<std::size_t>(ranks));
  bool ok = one_thread_per_rank(ranks, [&](int r) {
    std::vector<float>& mine = data[static_cast<std::size_t>(r)];
    mine.assign(count, static_cast<float>(r + 1));
    auto comm = team.comm(r);
    comm.all_reduce(mine.data(), mine.data(), count, ReduceOp::sum);  // returns once every rank's part is enqueued
    comm.wait();                                                       // ... and now it ran
  });
  const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
  for (const auto& rank : data) {
    for (float v : rank) ok = ok && v == expected;
  }
  std::printf("  per-rank views, one thread per rank: every rank holds %g everywhere: %s\n", expected, ok ? "yes" : "NO");
  return ok;
}

bool on_gpus(int devices, std::size_t count) {
  std::vector<int> ids;
  for (int d = 0; d < devices && d < chorus::cuda::kernel::kMaxRanks; ++d) ids.push_back(d);
  chorus::cuda::Team team = ids.size() > 1 ? chorus::cuda::Team(ids) : chorus::cuda::Team::virtual_ranks(0, 4);
  const int n = team.size();
  std::printf("%d %s, %d blocks per rank, %zu floats\n", n, ids.size() > 1 ? "GPUs" : "virtual ranks on GPU 0",
              team.blocks_per_rank(), count);
  std::vector<const float*> in;
  std::vector<float*> out;
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(team.device(r));
    float* buffer = nullptr;
    if (cudaMalloc(&buffer, count * sizeof(float)) != cudaSuccess) return false;
    std::vector<float> host(count, static_cast<float>(r + 1));
    cudaMemcpy(buffer, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    in.push_back(buffer);
    out.push_back(buffer);
  }
  bool ok = true;
  for (KernelAlgorithm algorithm : kAlgorithms) {
    cudaSetDevice(team.device(0));
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    team.all_reduce_with<float>(in, out, count, ReduceOp::max, algorithm);  // max: repeatable in place
    cudaEventRecord(stop);
    team.synchronize();
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    std::vector<float> got(count);
    cudaMemcpy(got.data(), out[static_cast<std::size_t>(n - 1)], count * sizeof(float), cudaMemcpyDeviceToHost);
    bool right = true;
    for (float v : got) right = right && v == static_cast<float>(n);
    const double busbw = ms > 0 ? 2.0 * (n - 1) / n * static_cast<double>(count * sizeof(float)) / (ms * 1e-3) / 1e9 : 0;
    std::printf("  %-12s %9.1f us  busbw %7.2f GB/s  result %s\n", to_string(algorithm), ms * 1e3, busbw, right ? "ok" : "WRONG");
    ok = ok && right;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  // The same team through per-rank views: one thread per rank, each on its own stream (virtual ranks run in
  // one launch, so they share one stream); the call returns once the kernels are enqueued, wait() syncs.
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(team.device(r));
    if (r == 0 || !team.is_virtual()) cudaStreamCreateWithFlags(&streams[static_cast<std::size_t>(r)], cudaStreamNonBlocking);
    if (r > 0 && team.is_virtual()) streams[static_cast<std::size_t>(r)] = streams[0];
  }
  const bool views_ok = one_thread_per_rank(n, [&](int r) {
    cudaSetDevice(team.device(r));
    auto comm = team.comm(r).on(streams[static_cast<std::size_t>(r)]);
    comm.all_reduce(out[static_cast<std::size_t>(r)], out[static_cast<std::size_t>(r)], count, ReduceOp::max);
    comm.wait();
  });
  std::vector<float> got(count);
  cudaMemcpy(got.data(), out[0], count * sizeof(float), cudaMemcpyDeviceToHost);
  bool right = views_ok;
  for (float v : got) right = right && v == static_cast<float>(n);
  std::printf("  per-rank views, one thread per rank: result %s\n", right ? "ok" : "WRONG");
  ok = ok && right;
  for (int r = 0; r < n; ++r) {
    if (r == 0 || !team.is_virtual()) cudaStreamDestroy(streams[static_cast<std::size_t>(r)]);
  }
  for (float* p : out) cudaFree(p);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1 << 16;
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  const bool ok = gpu ? on_gpus(devices, count) : on_the_cpu_twin(4, count) && per_rank_views_on_the_twin(4, count);
  return ok ? 0 : 1;
}
