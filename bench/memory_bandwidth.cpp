// chorus-membw: the machine's memory bandwidth, measured the way chorus-bench measures the host
// backend (same threads-per-rank layout, same buffer sizes, steady_clock, median of repeats), so the
// two can be compared as a ratio. Each of N threads repeatedly
//   copy:   dst = src            (what an all-gather step does: read peer, write own)
//   reduce: dst = a + b          (what a reduce-scatter step does: read peer, read own, write own)
// over its own buffers of the given size. Reported GB/s counts bytes written (1e9 bytes/GB), i.e.
// the same "payload moved" convention as algbw/busbw, plus the total memory traffic. -J writes the
// same figures as JSON (bench/chorus-compare reads them).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <chorus/bench/sizes.hpp>

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  double copy_seconds;
  double reduce_seconds;
};

// One timed round: all threads start together (spin on a flag) and the round ends when the slowest finishes.
template <class Body>
double timed_round(int threads, Body body) {
  std::vector<std::thread> pool;
  std::vector<double> seconds(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const auto start = Clock::now();
      body(t);
      seconds[t] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& thread : pool) thread.join();
  return *std::max_element(seconds.begin(), seconds.end());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-membw: per-thread memory copy and reduce bandwidth"};
  int threads = 4;
  std::string size_text = "64M";
  int repeats = 11;
  app.add_option("-t,--threads", threads, "threads (one per rank)")->check(CLI::Range(1, 1024));
  app.add_option("-s,--size", size_text, "bytes per buffer, e.g. 64M");
  app.add_option("-n,--repeats", repeats, "timed repeats; the median is reported")->check(CLI::Range(1, 1000));
  std::string json_path;
  app.add_option("-J,--json", json_path, "also write the figures as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  const std::size_t bytes = chorus::bench::parse_size(size_text);
  const std::size_t count = bytes / sizeof(float);
  std::vector<std::vector<float>> a(threads, std::vector<float>(count, 1.0f));
  std::vector<std::vector<float>> b(threads, std::vector<float>(count, 2.0f));
  std::vector<std::vector<float>> dst(threads, std::vector<float>(count, 0.0f));

  auto copy = [&](int t) { std::memcpy(dst[t].data(), a[t].data(), count * sizeof(float)); };
  auto reduce = [&](int t) {
    float* out = dst[t].data();
    const float* x = a[t].data();
    const float* y = b[t].data();
    for (std::size_t i = 0; i < count; ++i) out[i] = x[i] + y[i];
  };
  timed_round(threads, copy);  // warm-up: first touch, page faults
  timed_round(threads, reduce);
  std::vector<double> copy_times, reduce_times;
  for (int r = 0; r < repeats; ++r) {
    copy_times.push_back(timed_round(threads, copy));
    reduce_times.push_back(timed_round(threads, reduce));
  }
  const double written = static_cast<double>(count * sizeof(float)) * threads;
  const double copy_gbps = written / median(copy_times) / 1e9;
  const double reduce_gbps = written / median(reduce_times) / 1e9;
  std::printf("# chorus-membw: %d threads, %zu bytes per buffer, median of %d\n", threads, count * sizeof(float),
              repeats);
  std::printf("%-8s %14s %18s\n", "kernel", "written(GB/s)", "traffic(GB/s)");
  std::printf("%-8s %14.2f %18.2f\n", "copy", copy_gbps, 2 * copy_gbps);
  std::printf("%-8s %14.2f %18.2f\n", "reduce", reduce_gbps, 3 * reduce_gbps);
  if (!json_path.empty()) {
    const nlohmann::json doc{{"tool", "chorus-membw"},
                             {"threads", threads},
                             {"bytes_per_buffer", count * sizeof(float)},
                             {"repeats", repeats},
                             {"copy_written_gbps", copy_gbps},
                             {"reduce_written_gbps", reduce_gbps}};
    std::ofstream file(json_path);
    file << doc.dump(2) << "\n";
    if (!file) {
      std::fprintf(stderr, "chorus-membw: error: cannot write JSON to %s\n", json_path.c_str());
      return 2;
    }
  }
  return 0;
}
