// chorus-cuda-bench: chorus's CUDA kernels over a size sweep, timed with CUDA events, in the nccl-tests
// column style (time, algbw, busbw with the project's formulas, chorus/bench/bandwidth.hpp), one row per
// size and kernel: every kernel that serves the collective (cuda/kernel_sweep.hpp), then Algorithm::automatic
// as its own row, labelled with the kernel it picked, and vs_best (a row's time over the fastest kernel's at
// that size: 1.00 on the automatic row means it picked the fastest). After each sweep, the measured
// crossovers (cuda/measured_crossovers.hpp: the largest size each kernel was fastest at) and, last, the
// line to paste into TeamOptions. First, the reduce-copy primitive against the device's own
// device-to-device copy, the bandwidth ceiling the kernels move data at. Virtual ranks on GPU 0 (default
// 4), or --gpus for one rank per visible GPU. docs/cuda/benchmark.md.
//
//   chorus-cuda-bench [-c all_reduce|broadcast|reduce|all_gather|reduce_scatter|all_to_all|sendrecv|all]
//                     [--ranks N | --gpus] [-b 8] [-e 256M] [-f 4] [-n 50] [-w 5] [-J out.json]
// Needs a GPU: exits 77 (skipped) without one.
#include <chorus/core/config.hpp>
#include <chorus/bench/bandwidth.hpp>
#include <chorus/bench/sizes.hpp>
#include <chorus/cuda.hpp>
#include <chorus/cuda/kernel_sweep.hpp>
#include <chorus/cuda/measured_crossovers.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>


using chorus::Collective;
using chorus::ReduceOp;
using chorus::cuda::kernel::KernelAlgorithm;
namespace sweep = chorus::cuda::sweep;

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

// The sweep's settings and every rank's buffers (an input and an output of the largest size each).
struct Setup {
  chorus::cuda::Team* team;
  std::vector<const float*> in;
  std::vector<float*> out;
  int warmup, iterations;
};

// One printed row, kept until every kernel of its size is timed (vs_best needs the fastest).
struct Row {
  std::size_t bytes, count;
  std::string kernel;
  bool automatic;
  double seconds, algbw, busbw, vs_best;
};

// The automatic row's call: the Team's own entry point with Algorithm::automatic, as a user makes it.
void automatic_call(chorus::cuda::Team& team, Collective collective, const Setup& s, std::size_t count) {
  switch (collective) {
    case Collective::all_reduce: return team.all_reduce<float>(s.in, s.out, count, ReduceOp::sum);
    case Collective::broadcast: return team.broadcast<float>(s.in, s.out, count, 0);
    case Collective::reduce: return team.reduce<float>(s.in, s.out, count, ReduceOp::sum, 0);
    case Collective::all_gather: return team.all_gather<float>(s.in, s.out, count);
    case Collective::reduce_scatter: return team.reduce_scatter<float>(s.in, s.out, count, ReduceOp::sum);
    case Collective::all_to_all: return team.all_to_all<float>(s.in, s.out, count);
  }
}

// Sweeps one target; appends its rows to `json_rows` and its timings' fit to `fits`.
void sweep_target(sweep::Target target, const Setup& s, std::size_t min_bytes, std::size_t max_bytes, double factor,
                  nlohmann::json& json_rows, std::vector<chorus::cuda::CrossoverFit>& fits) {
  chorus::cuda::Team& team = *s.team;
  const int n = team.size();
  const bool collective = sweep::is_collective(target);
  const Collective c = collective ? sweep::collective_of(target) : Collective::all_reduce;
  std::printf("#\n# %s: %s\n", sweep::to_string(target),
              collective ? "every kernel that serves it, then automatic (auto:<its pick>); root 0 where rooted"
                         : "ring exchange through Team::transfer (rank r sends to r+1); busbw = algbw (nccl-tests' sendrecv)");
  std::printf("%12s %12s %16s %10s %10s %10s %8s\n", "size(B)", "count", "kernel", "time(us)", "algbw", "busbw", "vs_best");
  std::vector<chorus::cuda::KernelTiming> timings;
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes = static_cast<std::size_t>(static_cast<double>(bytes) * factor)) {
    // collectives: nccl-tests' meaning of a size (bandwidth.hpp); sendrecv: the bytes each rank sends.
    const chorus::bench::Shape shape = collective ? chorus::bench::shape_of(c, bytes, sizeof(float), n)
                                                  : chorus::bench::Shape{bytes / sizeof(float), 0, 0, bytes / sizeof(float) * sizeof(float),
                                                                         bytes / sizeof(float)};
    if (shape.count > 0) {
      std::vector<Row> rows;
      const auto time = [&](const std::function<void()>& launch, const std::string& label, bool automatic) {
        const double seconds = median_ms(launch, s.warmup, s.iterations, 0) * 1e-3;
        team.synchronize();  // bounded; a kernel's timeout becomes chorus::Error here
        const double algbw = chorus::bench::algbw_gbps(shape.bytes, seconds);
        rows.push_back({shape.bytes, shape.elements, label, automatic, seconds, algbw,
                        collective ? chorus::bench::busbw_gbps(c, n, shape.bytes, seconds) : algbw, 0.0});
        return seconds;
      };
      for (KernelAlgorithm k : sweep::kernels_for(target)) {
        double seconds = 0;
        if (!collective) {
          std::vector<chorus::cuda::Transfer<float>> ring;
          for (int r = 0; r < n; ++r) {
            ring.push_back({r, (r + 1) % n, s.in[static_cast<std::size_t>(r)], s.out[static_cast<std::size_t>((r + 1) % n)], shape.count});
          }
          seconds = time([&] { team.transfer<float>(ring); }, "p2p", false);
        } else {
          seconds = time([&] { team.collective_with<float>(c, s.in, s.out, shape.count, ReduceOp::sum, 0, k); }, to_string(k), false);
        }
        timings.push_back({sweep::choice_bytes(shape.count, sizeof(float)), k, seconds});
      }
      if (collective) {
        const KernelAlgorithm pick = sweep::automatic_kernel(c, shape.count, sizeof(float), n, team.options().crossovers);
        time([&] { automatic_call(team, c, s, shape.count); }, std::string("auto:") + to_string(pick), true);
      }
      double best = rows.front().seconds;
      for (const Row& row : rows) {
        if (!row.automatic) best = std::min(best, row.seconds);
      }
      for (Row& row : rows) {
        row.vs_best = best > 0 ? row.seconds / best : 1.0;
        std::printf("%12zu %12zu %16s %10.2f %10.2f %10.2f %8.2f\n", row.bytes, row.count, row.kernel.c_str(), row.seconds * 1e6,
                    row.algbw, row.busbw, row.vs_best);
        json_rows.push_back({{"collective", sweep::to_string(target)}, {"size", row.bytes}, {"count", row.count},
                             {"kernel", row.kernel}, {"automatic", row.automatic}, {"time_us", row.seconds * 1e6},
                             {"algbw_gbps", row.algbw}, {"busbw_gbps", row.busbw}, {"vs_best", row.vs_best}});
      }
    }
    if (factor <= 1) break;
  }
  if (!collective) return;
  const chorus::cuda::CrossoverFit fit = chorus::cuda::fit_crossovers(c, n, timings, team.options().crossovers);
  if (fit.fields.empty()) {
    std::printf("# measured crossovers (%s): none, automatic always runs %s\n", sweep::to_string(target),
                to_string(sweep::automatic_kernel(c, 1, sizeof(float), n, team.options().crossovers)));
    return;
  }
  std::string fields;
  for (const chorus::cuda::FittedField& f : fit.fields) fields += " " + f.name + " = " + std::to_string(f.value);
  std::printf("# measured crossovers (%s, %d ranks, bytes as kernel_for sees them):%s\n", sweep::to_string(target), n, fields.c_str());
  for (const std::string& note : fit.notes) std::printf("#   note: %s\n", note.c_str());
  fits.push_back(fit);
}

nlohmann::json crossovers_json(const chorus::cuda::KernelCrossovers& c) {
  return {{"ll_max", c.ll_max},       {"one_shot_max_small_team", c.one_shot_max_small_team},
          {"one_shot_max", c.one_shot_max}, {"small_team_ranks", c.small_team_ranks},
          {"two_shot_max", c.two_shot_max}, {"gather_one_shot_max", c.gather_one_shot_max}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus's CUDA kernels over a size sweep, and Algorithm::automatic's measured crossovers"};
  std::string collective = "all_reduce";
  int ranks = 4;
  bool gpus = false;
  std::string begin = "8", end = "256M", json_path;
  double factor = 4;
  int iterations = 50, warmup = 5;
  app.add_option("-c,--collective", collective, "what to sweep (all: every one in turn)")->check(CLI::IsMember(sweep::target_names()));
  app.add_option("--ranks", ranks, "virtual ranks on GPU 0")->check(CLI::Range(2, chorus::cuda::kernel::kMaxRanks));
  app.add_flag("--gpus", gpus, "one rank per visible GPU instead of virtual ranks");
  app.add_option("-b,--minbytes", begin, "smallest size (K, M, G suffixes)");
  app.add_option("-e,--maxbytes", end, "largest size");
  app.add_option("-f,--stepfactor", factor, "size factor between rows")->check(CLI::PositiveNumber);
  app.add_option("-n,--iters", iterations, "timed iterations (the median is printed)")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", warmup, "untimed iterations first")->check(CLI::NonNegativeNumber);
  app.add_option("-J,--json", json_path, "also write the rows and the measured crossovers as JSON to this file");
  app.set_version_flag("--version", CHORUS_VERSION_STRING);
  CLI11_PARSE(app, argc, argv);
  std::size_t min_bytes = 0, max_bytes = 0;
  try {
    min_bytes = chorus::bench::parse_size(begin);
    max_bytes = chorus::bench::parse_size(end);
    if (min_bytes > max_bytes) throw std::invalid_argument("-b " + begin + " is above -e " + end);
    if (!json_path.empty() && !std::ofstream(json_path, std::ios::app)) throw std::invalid_argument("cannot write JSON to " + json_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-cuda-bench: error: %s\n", e.what());
    return 2;
  }
  const std::vector<sweep::Target> targets = sweep::parse_targets(collective);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("chorus-cuda-bench: no GPU visible: skipped\n");
    return 77;
  }
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

  // Each rank's input and output hold the largest size: every collective's buffers fit in that (Shape).
  Setup setup{&team, {}, {}, warmup, iterations};
  for (int r = 0; r < n; ++r) {
    check(cudaSetDevice(team.device(r)), "cudaSetDevice");
    float *in = nullptr, *out = nullptr;
    check(cudaMalloc(&in, max_bytes + 64), "cudaMalloc");
    check(cudaMalloc(&out, max_bytes + 64), "cudaMalloc");
    check(cudaMemset(in, 0, max_bytes + 64), "cudaMemset");
    check(cudaMemset(out, 0, max_bytes + 64), "cudaMemset");
    setup.in.push_back(in);
    setup.out.push_back(out);
  }
  check(cudaSetDevice(team.device(0)), "cudaSetDevice");
  std::printf("# %d %s, %d blocks per rank, float (sum where reducing), out of place; times are medians of %d\n", n,
              gpus ? "GPUs" : "virtual ranks on GPU 0", team.blocks_per_rank(), iterations);

  nlohmann::json rows = nlohmann::json::array();
  std::vector<chorus::cuda::CrossoverFit> fits;
  try {
    for (sweep::Target target : targets) sweep_target(target, setup, min_bytes, max_bytes, factor, rows, fits);
  } catch (const chorus::Error& e) {  // a kernel's timeout, a refused call: say which and fail
    std::fprintf(stderr, "chorus-cuda-bench: %s\n", e.what());
    return 1;
  }

  const chorus::cuda::KernelCrossovers base = team.options().crossovers;
  std::vector<std::string> notes;
  const chorus::cuda::KernelCrossovers measured = chorus::cuda::apply_fits(base, fits, &notes);
  const std::string paste = chorus::cuda::paste_line(measured, base);
  if (!fits.empty()) {
    std::printf("#\n# measured crossovers, %d ranks: ll_max %zu, one_shot_max_small_team %zu, one_shot_max %zu, two_shot_max %zu, "
                "gather_one_shot_max %zu\n", n, measured.ll_max, measured.one_shot_max_small_team, measured.one_shot_max,
                measured.two_shot_max, measured.gather_one_shot_max);
    for (const std::string& note : notes) std::printf("#   note: %s\n", note.c_str());
    std::printf("# paste into TeamOptions: %s\n", paste.empty() ? "(nothing: the defaults already match)" : paste.c_str());
  }
  for (int r = 0; r < n; ++r) {
    cudaFree(const_cast<float*>(setup.in[static_cast<std::size_t>(r)]));
    cudaFree(setup.out[static_cast<std::size_t>(r)]);
  }
  if (!json_path.empty()) {
    nlohmann::json doc = {{"tool", "chorus-cuda-bench"}, {"version", CHORUS_VERSION_STRING}, {"backend", "cuda"}, {"collective", collective},
                          {"ranks", n}, {"gpus", gpus}, {"iters", iterations}, {"warmup", warmup}, {"type", "float"}, {"rows", rows}};
    nlohmann::json fitted = nlohmann::json::array();
    for (const chorus::cuda::CrossoverFit& fit : fits) {
      nlohmann::json fields = nlohmann::json::object();
      for (const chorus::cuda::FittedField& f : fit.fields) fields[f.name] = f.value;
      fitted.push_back({{"collective", to_string(fit.collective)}, {"ranks", fit.ranks}, {"fields", fields}, {"notes", fit.notes}});
    }
    doc["fits"] = fitted;
    doc["defaults"] = crossovers_json(base);
    doc["measured_crossovers"] = crossovers_json(measured);
    doc["paste"] = paste;
    std::ofstream file(json_path);
    file << doc.dump(2) << "\n";
    if (!file) {
      std::fprintf(stderr, "chorus-cuda-bench: error: cannot write JSON to %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
