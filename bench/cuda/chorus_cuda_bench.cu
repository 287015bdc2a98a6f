// chorus-cuda-bench: chorus's CUDA all-reduce kernels over a size sweep, timed with CUDA events, in the
// nccl-tests column style (time, algbw, busbw; busbw = algbw x 2(n-1)/n), one row per size and kernel;
// and the reduce-copy primitive against the device's own device-to-device copy, the bandwidth ceiling
// the kernels move data at. Virtual ranks on GPU 0 (default 4), or --gpus for one rank per visible GPU.
//
//   chorus-cuda-bench [--ranks N | --gpus] [-b 8] [-e 256M] [-f 4] [-n 50] [-w 5]
// Needs a GPU: exits 77 (skipped) without one.
#include <chorus/bench/bandwidth.hpp>
#include <chorus/bench/sizes.hpp>
#include <chorus/cuda.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using chorus::ReduceOp;
using chorus::cuda::kernel::KernelAlgorithm;

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "chorus-cuda-bench: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// One rank's reduce-copy over `count` floats: the primitive alone (1 source, 1 destination), no flags.
__global__ void copy_kernel(const float* source, float* destination, std::size_t count) {
  struct GridBlock {  // the whole grid as one "block" of lanes: the primitive's grid-stride form
    __device__ int lane() const { return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); }
    __device__ int lanes() const { return static_cast<int>(gridDim.x * blockDim.x); }
  };
  chorus::cuda::kernel::ReduceCopyArgs<float> args{{source}, 1, {destination}, 1, ReduceOp::sum, 0};
  chorus::cuda::kernel::reduce_copy(GridBlock{}, args, count);
}

template <class Launch>
double median_ms(Launch&& launch, int warmup, int iterations, cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) launch();
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<float> times;
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < iterations; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    launch();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus's CUDA all-reduce kernels over a size sweep"};
  int ranks = 4;
  bool gpus = false;
  std::string begin = "8", end = "256M";
  double factor = 4;
  int iterations = 50, warmup = 5;
  app.add_option("--ranks", ranks, "virtual ranks on GPU 0")->check(CLI::Range(2, chorus::cuda::kernel::kMaxRanks));
  app.add_flag("--gpus", gpus, "one rank per visible GPU instead of virtual ranks");
  app.add_option("-b,--minbytes", begin, "smallest size (K, M, G suffixes)");
  app.add_option("-e,--maxbytes", end, "largest size");
  app.add_option("-f,--stepfactor", factor, "size factor between rows")->check(CLI::PositiveNumber);
  app.add_option("-n,--iters", iterations, "timed iterations (the median is printed)")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", warmup, "untimed iterations first")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("chorus-cuda-bench: no GPU visible: skipped\n");
    return 77;
  }
  const std::size_t min_bytes = chorus::bench::parse_size(begin);
  const std::size_t max_bytes = chorus::bench::parse_size(end);
  std::vector<int> ids;
  for (int d = 0; gpus && d < devices && d < chorus::cuda::kernel::kMaxRanks; ++d) ids.push_back(d);
  chorus::cuda::Team team = gpus ? chorus::cuda::Team(ids) : chorus::cuda::Team::virtual_ranks(0, ranks);
  const int n = team.size();

  // The ceiling: a device-to-device copy of the largest size, and the reduce-copy primitive doing the same.
  {
    check(cudaSetDevice(team.device(0)), "cudaSetDevice");
    const std::size_t count = std::max<std::size_t>(max_bytes, 64u << 20) / sizeof(float);
    float *a = nullptr, *b = nullptr;
    check(cudaMalloc(&a, count * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&b, count * sizeof(float)), "cudaMalloc");
    check(cudaMemset(a, 1, count * sizeof(float)), "cudaMemset");
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, team.device(0)), "cudaDeviceGetAttribute");
    const double memcpy_ms = median_ms([&] { check(cudaMemcpyAsync(b, a, count * sizeof(float), cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync"); },
                                       warmup, iterations, 0);
    const double copy_ms = median_ms([&] { copy_kernel<<<sms * 4, 512>>>(a, b, count); }, warmup, iterations, 0);
    const double bytes = 2.0 * static_cast<double>(count * sizeof(float));  // read + write
    std::printf("# device-to-device copy of %zu MiB: cudaMemcpy %.1f GB/s, reduce-copy %.1f GB/s (%.0f%%)\n",
                count * sizeof(float) >> 20, bytes / (memcpy_ms * 1e6), bytes / (copy_ms * 1e6), 100.0 * memcpy_ms / copy_ms);
    cudaFree(a);
    cudaFree(b);
  }

  std::vector<const float*> in;
  std::vector<float*> out;
  for (int r = 0; r < n; ++r) {
    check(cudaSetDevice(team.device(r)), "cudaSetDevice");
    float* buffer = nullptr;
    check(cudaMalloc(&buffer, 2 * max_bytes + 64), "cudaMalloc");
    check(cudaMemset(buffer, 0, 2 * max_bytes + 64), "cudaMemset");
    in.push_back(buffer);
    out.push_back(buffer + max_bytes / sizeof(float) + 16);
  }
  check(cudaSetDevice(team.device(0)), "cudaSetDevice");
  std::printf("# %d %s, %d blocks per rank, float sum, out of place; times are medians of %d\n", n,
              gpus ? "GPUs" : "virtual ranks on GPU 0", team.blocks_per_rank(), iterations);
  std::printf("%12s %12s %12s %10s %10s %10s\n", "size(B)", "count", "kernel", "time(us)", "algbw", "busbw");
  const KernelAlgorithm algorithms[] = {KernelAlgorithm::ll_one_shot, KernelAlgorithm::one_shot, KernelAlgorithm::two_shot,
                                        KernelAlgorithm::ring};
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes = static_cast<std::size_t>(static_cast<double>(bytes) * factor)) {
    const std::size_t count = bytes / sizeof(float);
    for (KernelAlgorithm algorithm : algorithms) {
      const double ms = median_ms([&] { team.all_reduce_with<float>(in, out, count, ReduceOp::sum, algorithm); }, warmup,
                                  iterations, 0);
      team.synchronize();
      const double seconds = ms * 1e-3;
      std::printf("%12zu %12zu %12s %10.2f %10.2f %10.2f\n", count * sizeof(float), count, to_string(algorithm), ms * 1e3,
                  chorus::bench::algbw_gbps(count * sizeof(float), seconds),
                  chorus::bench::busbw_gbps(chorus::Collective::all_reduce, n, count * sizeof(float), seconds));
    }
    if (factor <= 1) break;
  }
  for (int r = 0; r < n; ++r) cudaFree(const_cast<float*>(in[static_cast<std::size_t>(r)]));
  return 0;
}
