// chorus-p2p-cuda: the point-to-point matrix between GPUs (docs/p2p.md), in the style of CUDA's
// p2pBandwidthLatencyTest and nvbandwidth. For every ordered pair (source i, destination j) whose
// peer access cudaDeviceCanAccessPeer allows in both directions:
//   ce: cudaMemcpyPeerAsync on the source's stream (a copy engine), i's buffer into j's;
//   sm: a copy kernel on the source GPU storing through the peer pointer into j's buffer;
// each unidirectional (one direction) and bidirectional (i -> j and j -> i at once, both directions'
// bytes over the time both took), timed with CUDA events, median of repeats; and one-way latency, a
// flag ping-pong between one thread on each GPU (each polls its own memory and writes the other's),
// round trip / 2 from the GPU's global timer, every spin bounded by CHORUS_TIMEOUT_MS. The diagonal is
// a local device-to-device copy (bandwidth) or n/a; a pair without peer access is n/a, never a number.
// Bytes are checked after each copy; a wrong byte fails the run.
//
//   chorus-p2p-cuda [-s 256M] [-n 8] [-r 5] [--latency-iters 10000] [-J out.json]
// Needs a GPU: exits 77 (skipped) without one.
#include <chorus/bench/sizes.hpp>
#include <chorus/bench/stats.hpp>
#include <chorus/core/env.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../p2p_matrix.hpp"
#include "../p2p_matrix_json.hpp"

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "chorus-p2p-cuda: error: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

__device__ unsigned char pattern(std::size_t i, int device) {
  return static_cast<unsigned char>((i * 131 + static_cast<std::size_t>(device) * 17 + 1) & 0xff);
}

__global__ void fill_kernel(unsigned char* data, std::size_t bytes, int device) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    data[i] = pattern(i, device);
  }
}

// Counts bytes that differ from `device`'s pattern (the copy's source).
__global__ void verify_kernel(const unsigned char* data, std::size_t bytes, int device, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    mine += data[i] != pattern(i, device);
  }
  if (mine) atomicAdd(wrong, mine);
}

// The SM copy: 16-byte loads and stores, grid-stride, then the tail byte by byte. `to` may be a peer
// GPU's memory (peer access enabled), so the stores cross NVLink or PCIe.
__global__ void copy_kernel(const unsigned char* from, unsigned char* to, std::size_t bytes) {
  const std::size_t lane = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t lanes = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t vectors = bytes / sizeof(uint4);
  const uint4* from4 = reinterpret_cast<const uint4*>(from);
  uint4* to4 = reinterpret_cast<uint4*>(to);
  for (std::size_t i = lane; i < vectors; i += lanes) to4[i] = from4[i];
  for (std::size_t i = vectors * sizeof(uint4) + lane; i < bytes; i += lanes) to[i] = from[i];
}

__device__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

struct PingResult {
  unsigned long long elapsed_ns;
  int timed_out;  // 1: a spin ran past the deadline
};

// One thread on each GPU. The pinger (is_pinger) writes k into the other GPU's flag and waits for k in
// its own; the ponger answers each k. Round 0 is the untimed handshake (both kernels running).
__global__ void ping_pong_kernel(volatile unsigned long long* own_flag, volatile unsigned long long* peer_flag,
                                 int rounds, bool is_pinger, unsigned long long timeout_ns, PingResult* result) {
  unsigned long long start = 0;
  for (int k = 0; k <= rounds; ++k) {
    const unsigned long long value = static_cast<unsigned long long>(k) + 1;
    if (is_pinger) {
      *peer_flag = value;
      __threadfence_system();
    }
    const unsigned long long deadline = global_ns() + timeout_ns;
    while (*own_flag != value) {
      if (global_ns() > deadline) {
        result->timed_out = 1;
        return;
      }
    }
    if (!is_pinger) {
      *peer_flag = value;
      __threadfence_system();
    }
    if (k == 0) start = global_ns();
  }
  result->elapsed_ns = global_ns() - start;
  result->timed_out = 0;
}

struct Gpu {
  int id = 0;
  int blocks = 0;  // copy kernel grid: 4 blocks per SM
  unsigned char* source = nullptr;
  unsigned char* landing = nullptr;
  unsigned long long* flag = nullptr;
  PingResult* ping = nullptr;
  unsigned long long* wrong = nullptr;
  cudaStream_t stream = nullptr;
};

struct Settings {
  std::size_t bytes = 256u << 20;
  int iters = 8;
  int repeats = 5;
  int latency_iters = 10000;
};

void verify(const Gpu& holder, const unsigned char* data, int source_device, std::size_t bytes, const char* what) {
  check(cudaSetDevice(holder.id), "cudaSetDevice");
  // Everything on the tool's (non-blocking) streams: the legacy default stream would not wait for them.
  check(cudaMemsetAsync(holder.wrong, 0, sizeof(unsigned long long), holder.stream), "cudaMemsetAsync");
  verify_kernel<<<holder.blocks, 256, 0, holder.stream>>>(data, bytes, source_device, holder.wrong);
  check(cudaGetLastError(), "verify_kernel launch");
  unsigned long long wrong = 0;
  check(cudaMemcpyAsync(&wrong, holder.wrong, sizeof wrong, cudaMemcpyDeviceToHost, holder.stream),
        "cudaMemcpyAsync (verify)");
  check(cudaStreamSynchronize(holder.stream), "cudaStreamSynchronize (verify)");
  if (wrong != 0) {
    std::fprintf(stderr, "chorus-p2p-cuda: error: %s from GPU %d to GPU %d delivered %llu wrong bytes\n", what,
                 source_device, holder.id, wrong);
    std::exit(1);
  }
}

// One copy of `bytes` from a's source into b's landing buffer, on a's stream: copy engine or SM kernel.
void launch_copy(const Gpu& a, const Gpu& b, std::size_t bytes, bool engine) {
  if (engine) {
    check(a.id == b.id ? cudaMemcpyAsync(b.landing, a.source, bytes, cudaMemcpyDeviceToDevice, a.stream)
                       : cudaMemcpyPeerAsync(b.landing, b.id, a.source, a.id, bytes, a.stream),
          "cudaMemcpyPeerAsync");
  } else {
    copy_kernel<<<a.blocks, 512, 0, a.stream>>>(a.source, b.landing, bytes);
    check(cudaGetLastError(), "copy_kernel launch");
  }
}

// Median bandwidth (GB/s) of copies a -> b, and with `both` b -> a at the same time on b's stream.
double copy_gbps(const Gpu& a, const Gpu& b, const Settings& s, bool engine, bool both) {
  cudaEvent_t start, b_done, stop;
  check(cudaSetDevice(a.id), "cudaSetDevice");
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaSetDevice(b.id), "cudaSetDevice");
  check(cudaEventCreateWithFlags(&b_done, cudaEventDisableTiming), "cudaEventCreate");
  std::vector<double> samples;
  for (int r = -1; r < s.repeats; ++r) {  // r = -1: warm-up
    check(cudaSetDevice(a.id), "cudaSetDevice");
    check(cudaEventRecord(start, a.stream), "cudaEventRecord");
    if (both) {  // b's copies start when a's do
      check(cudaSetDevice(b.id), "cudaSetDevice");
      check(cudaStreamWaitEvent(b.stream, start, 0), "cudaStreamWaitEvent");
    }
    for (int i = 0; i < s.iters; ++i) {
      check(cudaSetDevice(a.id), "cudaSetDevice");
      launch_copy(a, b, s.bytes, engine);
      if (both) {
        check(cudaSetDevice(b.id), "cudaSetDevice");
        launch_copy(b, a, s.bytes, engine);
      }
    }
    if (both) {
      check(cudaSetDevice(b.id), "cudaSetDevice");
      check(cudaEventRecord(b_done, b.stream), "cudaEventRecord");
      check(cudaStreamWaitEvent(a.stream, b_done, 0), "cudaStreamWaitEvent");
    }
    check(cudaSetDevice(a.id), "cudaSetDevice");
    check(cudaEventRecord(stop, a.stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    const double moved = static_cast<double>(s.bytes) * s.iters * (both ? 2 : 1);
    if (r >= 0) samples.push_back(moved / (ms / 1e3) / 1e9);
  }
  const char* what = engine ? "cudaMemcpyPeerAsync" : "the SM copy kernel";
  verify(b, b.landing, a.id, s.bytes, what);
  if (both) verify(a, a.landing, b.id, s.bytes, what);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaEventDestroy(b_done);
  return chorus::bench::median(samples);
}

double latency_us(const Gpu& a, const Gpu& b, const Settings& s) {
  const unsigned long long timeout_ns = static_cast<unsigned long long>(chorus::env::timeout_ms()) * 1000000ull;
  std::vector<double> samples;
  for (int r = 0; r < s.repeats; ++r) {
    for (const Gpu* g : {&a, &b}) {
      check(cudaSetDevice(g->id), "cudaSetDevice");
      check(cudaMemsetAsync(g->flag, 0, sizeof(unsigned long long), g->stream), "cudaMemsetAsync");
      check(cudaMemsetAsync(g->ping, 0, sizeof(PingResult), g->stream), "cudaMemsetAsync");
      check(cudaStreamSynchronize(g->stream), "cudaStreamSynchronize");  // both flags are 0 before either kernel runs
    }
    check(cudaSetDevice(b.id), "cudaSetDevice");
    ping_pong_kernel<<<1, 1, 0, b.stream>>>(b.flag, a.flag, s.latency_iters, false, timeout_ns, b.ping);
    check(cudaGetLastError(), "ping_pong_kernel launch");
    check(cudaSetDevice(a.id), "cudaSetDevice");
    ping_pong_kernel<<<1, 1, 0, a.stream>>>(a.flag, b.flag, s.latency_iters, true, timeout_ns, a.ping);
    check(cudaGetLastError(), "ping_pong_kernel launch");
    PingResult pinger{}, ponger{};
    check(cudaMemcpyAsync(&pinger, a.ping, sizeof pinger, cudaMemcpyDeviceToHost, a.stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(a.stream), "ping_pong_kernel (pinger)");
    check(cudaSetDevice(b.id), "cudaSetDevice");
    check(cudaMemcpyAsync(&ponger, b.ping, sizeof ponger, cudaMemcpyDeviceToHost, b.stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(b.stream), "ping_pong_kernel (ponger)");
    if (pinger.timed_out || ponger.timed_out) {
      std::fprintf(stderr, "chorus-p2p-cuda: error: the flag ping-pong between GPU %d and GPU %d waited past "
                   "CHORUS_TIMEOUT_MS=%ld ms\n", a.id, b.id, chorus::env::timeout_ms());
      std::exit(1);
    }
    samples.push_back(static_cast<double>(pinger.elapsed_ns) / s.latency_iters / 2 / 1e3);
  }
  return chorus::bench::median(samples);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-p2p-cuda: bandwidth and latency between every pair of GPUs (docs/p2p.md)"};
  Settings s;
  std::string size_text = "256M", json_path;
  app.add_option("-s,--size", size_text, "bytes per copy (K, M, G suffixes)")->capture_default_str();
  app.add_option("-n,--iters", s.iters, "copies per timed sample")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("-r,--repeats", s.repeats, "timed samples; the median is printed")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--latency-iters", s.latency_iters, "round trips per latency sample")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  app.add_option("-J,--json", json_path, "also write the matrices as JSON to this file");
  try {
    app.parse(argc, argv);
    s.bytes = chorus::bench::parse_size(size_text);
    if (s.bytes == 0) throw std::invalid_argument("--size must be at least 1 byte");
    if (!json_path.empty() && !std::ofstream(json_path, std::ios::app)) {
      throw std::invalid_argument("cannot write JSON to " + json_path);
    }
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-p2p-cuda: error: ");
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-p2p-cuda: error: %s\n", e.what());
    return 2;
  }

  int count = 0;
  const cudaError_t found = cudaGetDeviceCount(&count);
  if (found != cudaSuccess || count == 0) {
    std::printf("chorus-p2p-cuda: no CUDA device (%s): skipped\n",
                found != cudaSuccess ? cudaGetErrorString(found) : "none visible");
    return 77;
  }
  std::vector<Gpu> gpus(count);
  std::vector<std::string> labels;
  for (int d = 0; d < count; ++d) {
    Gpu& g = gpus[d];
    g.id = d;
    labels.push_back(std::to_string(d));
    check(cudaSetDevice(d), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    g.blocks = prop.multiProcessorCount * 4;
    std::printf("# GPU %d: %s, compute capability %d.%d\n", d, prop.name, prop.major, prop.minor);
    check(cudaMalloc(&g.source, s.bytes), "cudaMalloc");
    check(cudaMalloc(&g.landing, s.bytes), "cudaMalloc");
    check(cudaMalloc(&g.flag, sizeof(unsigned long long)), "cudaMalloc");
    check(cudaMalloc(&g.ping, sizeof(PingResult)), "cudaMalloc");
    check(cudaMalloc(&g.wrong, sizeof(unsigned long long)), "cudaMalloc");
    check(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    fill_kernel<<<g.blocks, 256, 0, g.stream>>>(g.source, s.bytes, d);
    check(cudaGetLastError(), "fill_kernel launch");
    check(cudaStreamSynchronize(g.stream), "fill");
  }
  // Peer access both ways, or the pair is n/a: a copy staged through the host is not a peer figure.
  std::vector<std::vector<bool>> peer(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      int i_reads_j = 0, j_reads_i = 0;
      check(cudaDeviceCanAccessPeer(&i_reads_j, i, j), "cudaDeviceCanAccessPeer");
      check(cudaDeviceCanAccessPeer(&j_reads_i, j, i), "cudaDeviceCanAccessPeer");
      peer[i][j] = i_reads_j && j_reads_i;
      if (!peer[i][j]) continue;
      check(cudaSetDevice(i), "cudaSetDevice");
      const cudaError_t enabled = cudaDeviceEnablePeerAccess(j, 0);
      if (enabled == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // clear the sticky-free error so later checks do not see it
      } else {
        check(enabled, "cudaDeviceEnablePeerAccess");
      }
    }
  }
  std::printf("# %zu bytes x %d copies per sample, median of %d samples; latency over %d round trips per sample\n\n",
              s.bytes, s.iters, s.repeats, s.latency_iters);

  const std::string local = "local device-to-device copy";
  p2p::Matrix ce_uni("Copy engine (cudaMemcpyPeerAsync) unidirectional bandwidth (GB/s)", local, labels);
  p2p::Matrix ce_bi("Copy engine bidirectional bandwidth (GB/s, both directions' bytes)", "n/a", labels);
  p2p::Matrix sm_uni("SM copy kernel (stores to peer memory) unidirectional bandwidth (GB/s)", local, labels);
  p2p::Matrix sm_bi("SM copy kernel bidirectional bandwidth (GB/s, both directions' bytes)", "n/a", labels);
  p2p::Matrix latency("One-way latency (us, flag ping-pong round trip / 2)", "n/a", labels);
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i != j && !peer[i][j]) continue;  // n/a: no peer access
      ce_uni.cells[i][j] = copy_gbps(gpus[i], gpus[j], s, true, false);
      sm_uni.cells[i][j] = copy_gbps(gpus[i], gpus[j], s, false, false);
      if (i == j) continue;
      ce_bi.cells[i][j] = copy_gbps(gpus[i], gpus[j], s, true, true);
      sm_bi.cells[i][j] = copy_gbps(gpus[i], gpus[j], s, false, true);
      latency.cells[i][j] = latency_us(gpus[i], gpus[j], s);
    }
  }
  for (const p2p::Matrix* m : {&ce_uni, &ce_bi, &sm_uni, &sm_bi, &latency}) {
    p2p::print_matrix(stdout, *m, "source GPU", "destination GPU");
  }
  if (count == 1) std::printf("# one GPU: only the diagonal (local copies) can be measured\n");
  std::fflush(stdout);
  if (!json_path.empty()) {
    nlohmann::json doc = {{"tool", "chorus-p2p-cuda"},          {"bytes", s.bytes},
                          {"iters", s.iters},                   {"repeats", s.repeats},
                          {"latency_iters", s.latency_iters},   {"gpus", count},
                          {"ce_unidirectional_gbps", p2p::matrix_json(ce_uni)},
                          {"ce_bidirectional_gbps", p2p::matrix_json(ce_bi)},
                          {"sm_unidirectional_gbps", p2p::matrix_json(sm_uni)},
                          {"sm_bidirectional_gbps", p2p::matrix_json(sm_bi)},
                          {"latency_us", p2p::matrix_json(latency)}};
    std::ofstream out(json_path);
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "chorus-p2p-cuda: error: cannot write JSON to %s\n", json_path.c_str());
      return 1;
    }
  }
  for (Gpu& g : gpus) {
    cudaSetDevice(g.id);
    cudaFree(g.source);
    cudaFree(g.landing);
    cudaFree(g.flag);
    cudaFree(g.ping);
    cudaFree(g.wrong);
    cudaStreamDestroy(g.stream);
  }
  return 0;
}
