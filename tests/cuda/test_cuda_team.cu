// chorus's CUDA collective kernels on a real GPU: virtual ranks (2, 4, 8 on one device) and, with
// several GPUs, one rank per device. Every result must equal, bit for bit, what the same kernel bodies
// computed on the CPU twin (which tests/cuda_twin proves equal to the host schedules); then a stress
// loop with changing sizes and seeded skew, CUDA-graph replay, and a rank that skips a call (the
// timeout record, then a fresh team works), and the NVTX range of each call naming the kernel that ran
// (an NVTX tool linked into this program records them: tests/trace/nvtx_recorder.cpp). Exits 77
// (skipped) when no GPU is visible.
//
// Plain main rather than Catch2: nvcc compiles this unit, and the checks print their own context.
#include <chorus/cuda.hpp>
#include <chorus/cuda/twin/twin_team.hpp>

#include "cuda/gpu_checks.hpp"
#include "trace/nvtx_recorder.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::cuda::kernel::KernelAlgorithm;

namespace {

using gpu_checks::check;
using gpu_checks::expect;

template <class T>
std::vector<T> values(int rank, std::size_t count, unsigned seed) {
  std::mt19937 random(seed * 131u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<T> out(count);
  for (T& v : out) v = T(value(random));
  return out;
}

// Runs one all_reduce on the GPU team and on a CPU twin with the same rank count and blocks; compares.
template <class T>
void compare(chorus::cuda::Team& team, KernelAlgorithm algorithm, std::size_t count, ReduceOp op, std::size_t offset,
             unsigned seed, const char* type) {
  const int n = team.size();
  std::vector<std::vector<T>> host_in, twin_out(static_cast<std::size_t>(n), std::vector<T>(count));
  std::vector<const T*> in_ptr, twin_in;
  std::vector<T*> out_ptr, twin_out_ptr;
  std::vector<T*> allocations;
  for (int r = 0; r < n; ++r) {
    host_in.push_back(values<T>(r, count, seed));
    T* in = nullptr;
    T* out = nullptr;
    check(cudaSetDevice(team.device(r)), "cudaSetDevice");
    check(cudaMalloc(&in, (count + offset) * sizeof(T) + 16), "cudaMalloc");
    check(cudaMalloc(&out, (count + offset) * sizeof(T) + 16), "cudaMalloc");
    check(cudaMemcpy(in + offset, host_in.back().data(), count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    allocations.push_back(in);
    allocations.push_back(out);
    in_ptr.push_back(in + offset);
    out_ptr.push_back(out + offset);
    twin_in.push_back(host_in.back().data());
    twin_out_ptr.push_back(twin_out[static_cast<std::size_t>(r)].data());
  }
  team.all_reduce_with<T>(in_ptr, out_ptr, count, op, algorithm);
  team.synchronize();
  chorus::cuda::twin::Options options;
  options.blocks = team.blocks_per_rank();
  options.threads = 4;
  options.staging_bytes = 8u << 20;
  options.ll_bytes = 1u << 20;
  options.fifo_slot_bytes = 128u << 10;
  options.ring_orders = team.ring_orders();  // the same channel rings: the same fold order per block
  chorus::cuda::twin::Team twin(n, options);
  twin.all_reduce_with<T>(twin_in, twin_out_ptr, count, op, algorithm);
  twin.synchronize();
  for (int r = 0; r < n; ++r) {
    std::vector<T> got(count);
    check(cudaMemcpy(got.data(), out_ptr[static_cast<std::size_t>(r)], count * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const bool same = count == 0 || std::memcmp(got.data(), twin_out[static_cast<std::size_t>(r)].data(), count * sizeof(T)) == 0;
    expect(same, std::string(to_string(algorithm)) + " " + type + " ranks " + std::to_string(n) + " count " +
                     std::to_string(count) + " offset " + std::to_string(offset) + " rank " + std::to_string(r) +
                     ": GPU differs from the CPU twin");
  }
  for (T* p : allocations) cudaFree(p);
}

// CHORUS_GPU_TEST_QUICK=1: two ranks, small sizes only (for compute-sanitizer, which is slow).
bool quick() { return std::getenv("CHORUS_GPU_TEST_QUICK") != nullptr; }

// The other collectives: one call of each (collective, kernel) on the GPU team and on a CPU twin with the
// same rank count and blocks; every rank's output compared byte for byte (reduce: the root's only).
template <class T>
void compare_collective(chorus::cuda::Team& team, chorus::Collective collective, KernelAlgorithm algorithm, std::size_t count,
                        ReduceOp op, unsigned seed, const char* type) {
  const int n = team.size();
  const int root = n - 1;
  const std::size_t sends = chorus::send_count(collective, count, n);
  const std::size_t recvs = chorus::recv_count(collective, count, n);
  std::vector<std::vector<T>> host_in, twin_out(static_cast<std::size_t>(n), std::vector<T>(recvs));
  std::vector<const T*> in_ptr, twin_in;
  std::vector<T*> out_ptr, twin_out_ptr, allocations;
  for (int r = 0; r < n; ++r) {
    host_in.push_back(values<T>(r, sends, seed));
    T* in = nullptr;
    T* out = nullptr;
    check(cudaSetDevice(team.device(r)), "cudaSetDevice");
    check(cudaMalloc(&in, sends * sizeof(T) + 16), "cudaMalloc");
    check(cudaMalloc(&out, recvs * sizeof(T) + 16), "cudaMalloc");
    check(cudaMemcpy(in, host_in.back().data(), sends * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    allocations.push_back(in);
    allocations.push_back(out);
    in_ptr.push_back(in);
    out_ptr.push_back(out);
    twin_in.push_back(host_in.back().data());
    twin_out_ptr.push_back(twin_out[static_cast<std::size_t>(r)].data());
  }
  team.collective_with<T>(collective, in_ptr, out_ptr, count, op, root, algorithm);
  team.synchronize();
  chorus::cuda::twin::Options options;
  options.blocks = team.blocks_per_rank();
  options.threads = 4;
  options.staging_bytes = 8u << 20;
  options.ll_bytes = 1u << 20;
  options.fifo_slot_bytes = 128u << 10;
  options.ring_orders = team.ring_orders();  // the same channel rings: the same fold order per block
  chorus::cuda::twin::Team twin(n, options);
  twin.collective_with<T>(collective, twin_in, twin_out_ptr, count, op, root, algorithm);  // the same template, on the twin
  twin.synchronize();
  for (int r = 0; r < n; ++r) {
    if (collective == chorus::Collective::reduce && r != root) continue;
    std::vector<T> got(recvs);
    check(cudaMemcpy(got.data(), out_ptr[static_cast<std::size_t>(r)], recvs * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const bool same = recvs == 0 || std::memcmp(got.data(), twin_out[static_cast<std::size_t>(r)].data(), recvs * sizeof(T)) == 0;
    expect(same, std::string(chorus::to_string(collective)) + " " + to_string(algorithm) + " " + type + " ranks " +
                     std::to_string(n) + " count " + std::to_string(count) + " rank " + std::to_string(r) +
                     ": GPU differs from the CPU twin");
  }
  for (T* p : allocations) cudaFree(p);
}

void collectives(chorus::cuda::Team& team) {
  using chorus::Collective;
  const std::pair<Collective, KernelAlgorithm> pairs[] = {
      {Collective::broadcast, KernelAlgorithm::one_shot},      {Collective::reduce, KernelAlgorithm::one_shot},
      {Collective::all_gather, KernelAlgorithm::one_shot},     {Collective::all_gather, KernelAlgorithm::ring},
      {Collective::reduce_scatter, KernelAlgorithm::one_shot}, {Collective::reduce_scatter, KernelAlgorithm::ring},
      {Collective::all_to_all, KernelAlgorithm::one_shot},     {Collective::all_to_all, KernelAlgorithm::pairwise},
      {Collective::broadcast, KernelAlgorithm::ring},          {Collective::reduce, KernelAlgorithm::ring}};
  for (const auto& pair : pairs) {
    for (std::size_t count : {std::size_t{1}, std::size_t{37}, std::size_t{70001}}) {
      if (quick() && count > 37) continue;
      compare_collective<float>(team, pair.first, pair.second, count, ReduceOp::sum, 5, "float");
      compare_collective<chorus::bfloat16>(team, pair.first, pair.second, count, ReduceOp::avg, 6, "bfloat16");
    }
  }
}

// Point-to-point transfers: a ring exchange, a pipeline (i -> i+1) and every ordered pair with local
// copies, each transfer a different pattern and one element longer than the last; every recv must hold
// exactly what was sent, twice in a row (the FIFO counters continue across calls).
void transfers(chorus::cuda::Team& team) {
  const int n = team.size();
  std::vector<std::vector<std::pair<int, int>>> patterns(3);
  for (int r = 0; r < n; ++r) patterns[0].emplace_back(r, (r + 1) % n);
  for (int r = 0; r + 1 < n; ++r) patterns[1].emplace_back(r, r + 1);
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) patterns[2].emplace_back(from, to);
  }
  for (std::size_t count : {std::size_t{0}, std::size_t{37}, std::size_t{300001}}) {
    if (quick() && count > 37) continue;
    for (std::size_t p = 0; p < patterns.size(); ++p) {
      std::vector<chorus::cuda::Transfer<float>> list;
      std::vector<std::vector<float>> sent;
      std::vector<float*> allocations;
      for (std::size_t t = 0; t < patterns[p].size(); ++t) {
        const auto [from, to] = patterns[p][t];
        const std::size_t elements = count == 0 ? 0 : count + t;
        sent.push_back(values<float>(static_cast<int>(t), elements, 9));
        float* send = nullptr;
        float* recv = nullptr;
        check(cudaSetDevice(team.device(from)), "cudaSetDevice");
        check(cudaMalloc(&send, elements * sizeof(float) + 16), "cudaMalloc");
        check(cudaMemcpy(send, sent.back().data(), elements * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
        check(cudaSetDevice(team.device(to)), "cudaSetDevice");
        check(cudaMalloc(&recv, elements * sizeof(float) + 16), "cudaMalloc");
        allocations.push_back(send);
        allocations.push_back(recv);
        list.push_back({from, to, send, recv, elements});
      }
      for (int call = 0; call < 2; ++call) {
        for (const auto& t : list) check(cudaMemset(t.recv, 0, t.count * sizeof(float) + 16), "cudaMemset");
        team.transfer(list);
        team.synchronize();
        for (std::size_t t = 0; t < list.size(); ++t) {
          std::vector<float> got(list[t].count);
          check(cudaMemcpy(got.data(), list[t].recv, list[t].count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
          expect(got == sent[t], "transfer pattern " + std::to_string(p) + " ranks " + std::to_string(n) + " count " +
                                     std::to_string(count) + " transfer " + std::to_string(t) + " call " + std::to_string(call) +
                                     ": recv differs from send");
        }
      }
      for (float* ptr : allocations) cudaFree(ptr);
    }
  }
}

// The largest count is 2^20 elements, except for LL (automatic runs it to a few KiB; its CPU twin, a
// lane at a time through 8-byte flagged words, takes seconds per call at 8 ranks): 65537 there.
void correctness(chorus::cuda::Team& team) {
  const KernelAlgorithm algorithms[] = {KernelAlgorithm::ll_one_shot, KernelAlgorithm::one_shot, KernelAlgorithm::two_shot,
                                        KernelAlgorithm::ring, KernelAlgorithm::tree};
  for (KernelAlgorithm algorithm : algorithms) {
    const bool ll = algorithm == KernelAlgorithm::ll_one_shot;
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{4097}, ll ? std::size_t{65537} : std::size_t{1} << 20}) {
      if (quick() && count > 4097) continue;
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
        compare<float>(team, algorithm, count, ReduceOp::sum, offset, 1, "float");
        compare<chorus::half>(team, algorithm, count, ReduceOp::sum, offset, 2, "half");
        compare<chorus::bfloat16>(team, algorithm, count, ReduceOp::avg, offset, 3, "bfloat16");
      }
    }
    if (!quick()) compare<double>(team, algorithm, ll ? 65537 : 3u << 20, ReduceOp::max, 0, 4, "double");
  }
}

// Many calls of changing sizes (the grid's shares change between calls; counters must carry over), with
// seeded skew, then the same calls captured in a CUDA graph and replayed: epochs live in device memory,
// so replays continue the sequence. Every result is compared with the CPU twin's.
void stress_and_graphs(int device) {
  chorus::cuda::TeamOptions options;
  options.delay_seed = 7;
  auto team = chorus::cuda::Team::virtual_ranks(device, 4, options);
  const std::size_t sizes[] = {1, 5000, 3, 1u << 18, 77, 4096, 1u << 16, 9};
  for (int call = 0; call < 200; ++call) {
    const KernelAlgorithm algorithm = static_cast<KernelAlgorithm>(call % 4);
    compare<float>(team, algorithm, sizes[call % 8], ReduceOp::sum, static_cast<std::size_t>(call % 2), static_cast<unsigned>(call),
                   "float (stress)");
  }
  // Graph: 8 calls captured once, replayed 100 times on fixed buffers; the result must not change.
  const std::size_t count = 10000;
  float* memory = nullptr;
  check(cudaMalloc(&memory, sizeof(float) * count * 8), "cudaMalloc");
  std::vector<const float*> in;
  std::vector<float*> out;
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < 4; ++r) {
    inputs.push_back(values<float>(r, count, 99));
    check(cudaMemcpy(memory + count * r, inputs.back().data(), sizeof(float) * count, cudaMemcpyHostToDevice), "cudaMemcpy");
    in.push_back(memory + count * r);
    out.push_back(memory + count * (4 + r));
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaGraph_t graph;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int call = 0; call < 8; ++call) {
    team.all_reduce_with<float>(in, out, count, ReduceOp::sum, static_cast<KernelAlgorithm>(call % 4), {stream});
  }
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  for (int replay = 0; replay < 100; ++replay) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  team.synchronize();
  std::vector<float> expected(count), got(count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = inputs[0][i];
    for (int r = 1; r < 4; ++r) acc += inputs[static_cast<std::size_t>(r)][i];  // ring's order differs: compare to one-shot's
    expected[i] = acc;
  }
  check(cudaMemcpy(got.data(), out[3], sizeof(float) * count, cudaMemcpyDeviceToHost), "cudaMemcpy");
  // The last captured call (call 7 = ring) wrote the output; its fold order is the ring's, so compare
  // with a tolerance here and bitwise against the twin above.
  double worst = 0;
  for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, static_cast<double>(std::fabs(got[i] - expected[i])));
  expect(worst < 1e-4, "graph replay result off by " + std::to_string(worst));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(memory);
}

// One rank skips: every other rank's kernel wait ends at CHORUS_KERNEL_TIMEOUT_MS with a record, the device is still
// usable, and a new team works.
void skipped_rank(int device, int n) {
  auto team = chorus::cuda::Team::virtual_ranks(device, n);
  float* buffers = nullptr;
  check(cudaMalloc(&buffers, sizeof(float) * 1024 * static_cast<std::size_t>(n)), "cudaMalloc");
  std::vector<const float*> in;
  std::vector<float*> out;
  for (int r = 0; r < n; ++r) {
    in.push_back(buffers + 1024 * r);
    out.push_back(buffers + 1024 * r);
  }
  std::vector<bool> takes_part(static_cast<std::size_t>(n), true);
  takes_part[1] = false;
  std::string message;
  try {
    team.all_reduce<float>(in, out, 1024, ReduceOp::sum, Algorithm::one_shot, {}, takes_part);
    team.synchronize();
  } catch (const chorus::Error& e) {
    message = e.what();
  }
  std::printf("skipped rank: %s\n", message.c_str());
  expect(message.find("for rank 1") != std::string::npos, "the timeout names the rank that skipped: " + message);
  check(cudaDeviceSynchronize(), "device still usable after the timeout");
  auto fresh = chorus::cuda::Team::virtual_ranks(device, n);
  fresh.all_reduce<float>(in, out, 1024, ReduceOp::sum, Algorithm::one_shot);
  fresh.synchronize();
  cudaFree(buffers);
}

// Each all_reduce is one NVTX range naming the kernel that ran: automatic's choice by size (4 ranks:
// LL to 16 KiB, one-shot to 512 KiB, two-shot to 8 MiB, then the ring), or the kernel asked for. A call
// refused by its checks opens none.
void nvtx_ranges(int device) {
  auto team = chorus::cuda::Team::virtual_ranks(device, 4);
  const std::size_t most = std::size_t{4} << 20;  // 16 MiB of floats per rank
  float* buffers = nullptr;
  check(cudaMalloc(&buffers, sizeof(float) * most * 4), "cudaMalloc");
  std::vector<const float*> in;
  std::vector<float*> out;
  for (std::size_t r = 0; r < 4; ++r) {
    in.push_back(buffers + most * r);
    out.push_back(buffers + most * r);
  }
  nvtx_recorder::take();
  for (std::size_t count : {std::size_t{1024}, std::size_t{64} << 10, std::size_t{1} << 20, most}) {
    team.all_reduce<float>(in, out, count, ReduceOp::sum);
  }
  team.all_reduce_with<float>(in, out, 1000, ReduceOp::max, KernelAlgorithm::two_shot);
  bool refused = false;
  try {
    team.all_reduce<float>({in[0]}, out, 8, ReduceOp::sum);  // one input for four ranks
  } catch (const chorus::Error&) {
    refused = true;
  }
  expect(refused, "an all_reduce with one input for four ranks is refused");
  team.synchronize();
  const std::vector<std::string> want = {
      "push chorus::all_reduce 4 KiB float32 sum ll_one_shot", "pop", "push chorus::all_reduce 256 KiB float32 sum one_shot",
      "pop", "push chorus::all_reduce 4 MiB float32 sum two_shot", "pop", "push chorus::all_reduce 16 MiB float32 sum ring",
      "pop", "push chorus::all_reduce 3.9 KiB float32 max two_shot", "pop"};
  const std::vector<std::string> got = nvtx_recorder::take();
  if (!nvtx_recorder::attached() && std::getenv("NVTX_INJECTION64_PATH") != nullptr) {
    // Another NVTX tool was injected (compute-sanitizer injects its own): NVTX serves one tool per process.
    std::printf("NVTX ranges: not checked, NVTX_INJECTION64_PATH names another tool\n");
    cudaFree(buffers);
    return;
  }
  std::string seen;
  for (const std::string& event : got) seen += "\n  " + event;
  expect(got == want, "NVTX ranges of cuda::Team::all_reduce:" + seen);
  cudaFree(buffers);
}

}  // namespace

static_assert(chorus::check_communicator<chorus::cuda::RankComm>(), "cuda::RankComm satisfies the communicator contract");

// The per-rank view (team_comm.cuh): one thread per rank on one shared stream, then one thread for all
// ranks inside group(), then a split; each compared with the sum computed here.
void per_rank_views(int device) {
  const int n = 4;
  const std::size_t count = 1000;
  auto team = chorus::cuda::Team::virtual_ranks(device, n);
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<float*> data(n);
  for (int r = 0; r < n; ++r) {
    check(cudaMalloc(&data[static_cast<std::size_t>(r)], count * sizeof(float)), "cudaMalloc");
    const std::vector<float> host(count, static_cast<float>(r + 1));
    check(cudaMemcpy(data[static_cast<std::size_t>(r)], host.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        chorus::cuda::RankComm comm = team.comm(r).on(stream);
        comm.all_reduce(data[static_cast<std::size_t>(r)], data[static_cast<std::size_t>(r)], count, ReduceOp::sum);  // 10
        comm.barrier();
        chorus::cuda::RankComm pair = comm.split(r / 2, r);
        pair.all_reduce(data[static_cast<std::size_t>(r)], data[static_cast<std::size_t>(r)], count, ReduceOp::sum);  // 20
        pair.wait();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < n; ++r) expect(errors[static_cast<std::size_t>(r)].empty(), "per-rank view: " + errors[static_cast<std::size_t>(r)]);
  team.group([&] {
    for (int r = 0; r < n; ++r) team.comm(r).on(stream).all_reduce(data[static_cast<std::size_t>(r)], data[static_cast<std::size_t>(r)], count, ReduceOp::sum);
  });
  team.comm(0).on(stream).wait();
  for (int r = 0; r < n; ++r) {
    std::vector<float> got(count);
    check(cudaMemcpy(got.data(), data[static_cast<std::size_t>(r)], count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    expect(got == std::vector<float>(count, 80.0f), "per-rank view: rank " + std::to_string(r) + " got " + std::to_string(got[0]) + ", expected 80");
    cudaFree(data[static_cast<std::size_t>(r)]);
  }
  cudaStreamDestroy(stream);
}

// The device memory the driver takes at a kernel's first launch for its per-thread stack frame (local
// memory is reserved for every thread that can be resident): cudaMemGetInfo before and after the first
// all_reduce of each type, on a fresh context's team. A report, not a check: the figures go into the notes.
void first_launch_memory(int device) {
  auto team = chorus::cuda::Team::virtual_ranks(device, 8);
  const std::size_t count = 4096;
  void* memory = nullptr;
  check(cudaMalloc(&memory, 8 * 8 * count * 2), "cudaMalloc");
  const auto free_bytes = [] {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
  };
  const auto first = [&](auto zero, const char* type) {
    using T = decltype(zero);
    std::vector<const T*> in;
    std::vector<T*> out;
    for (int r = 0; r < 8; ++r) {
      in.push_back(static_cast<const T*>(memory) + count * r);
      out.push_back(static_cast<T*>(memory) + count * (8 + r));
    }
    const std::size_t before = free_bytes();
    team.all_reduce_with<T>(in, out, count, ReduceOp::sum, KernelAlgorithm::one_shot);
    team.synchronize();
    const std::size_t after = free_bytes();
    std::printf("  first launch of %-8s: %8.1f MiB of device memory taken\n", type,
                (static_cast<double>(before) - static_cast<double>(after)) / (1 << 20));
  };
  first(float{}, "float");
  first(double{}, "double");
  first(chorus::half{}, "half");
  first(chorus::bfloat16{}, "bfloat16");
  first(std::int32_t{}, "int32");
  first(std::uint8_t{}, "uint8");
  cudaFree(memory);
}

// Prints how long each part took, so a run that hits its time limit shows where the time went.
template <class Check>
void timed(const std::string& what, Check&& check_fn) {
  const auto start = std::chrono::steady_clock::now();
  check_fn();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("  %-34s %6.1f s, %d failure(s) so far\n", what.c_str(), seconds, gpu_checks::failures);
  std::fflush(stdout);
}

// Sections (all by default; name some to run only those, e.g. `test_cuda_team ranks8 rings`): memory,
// ranks2, ranks4, nvtx, views, stress, skipped, ranks8, rings, gpus. CHORUS_GPU_TEST_QUICK=1 keeps ranks2,
// nvtx and views at small sizes (for compute-sanitizer, which is slow).
int main(int argc, char** argv) {
  const int devices = gpu_checks::gpus_or_skip();
  const std::vector<std::string> asked(argv + 1, argv + argc);
  const auto run = [&](const std::string& section, bool in_quick) {
    if (quick() && !in_quick) return false;
    return asked.empty() || std::find(asked.begin(), asked.end(), section) != asked.end();
  };
  const auto virtual_ranks = [](int n) {
    auto team = chorus::cuda::Team::virtual_ranks(0, n);
    std::printf("virtual ranks %d: %d blocks per rank\n", n, team.blocks_per_rank());
    timed("all_reduce kernels vs twin", [&] { correctness(team); });
    timed("other collectives vs twin", [&] { collectives(team); });
    timed("transfers", [&] { transfers(team); });
  };
  if (run("memory", false)) timed("first-launch memory", [] { first_launch_memory(0); });
  if (run("ranks2", true)) virtual_ranks(2);
  if (run("ranks4", false)) virtual_ranks(4);
  if (run("nvtx", true)) timed("NVTX ranges", [] { nvtx_ranges(0); });
  if (run("views", true)) timed("per-rank views", [] { per_rank_views(0); });
  if (run("stress", false)) timed("stress and graph replay", [] { stress_and_graphs(0); });
  if (run("skipped", false)) timed("skipped rank", [] { skipped_rank(0, 4); });
  // 8 virtual ranks late: its CPU twin runs take the longest, and a run cut short by its time limit
  // should have done the other checks first.
  if (run("ranks8", false)) virtual_ranks(8);
  if (run("rings", false)) {  // a different ring per block: identity, reversed, shuffled
    chorus::cuda::TeamOptions options;
    options.ring_orders = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}};
    auto team = chorus::cuda::Team::virtual_ranks(0, 4, options);
    std::printf("virtual ranks 4 on 3 rings: %d blocks per rank\n", team.blocks_per_rank());
    timed("all_reduce kernels vs twin", [&] { correctness(team); });
    timed("other collectives vs twin", [&] { collectives(team); });
  }
  if (devices > 1 && run("gpus", false)) {
    std::vector<int> all;
    for (int d = 0; d < devices && d < chorus::cuda::kernel::kMaxRanks; ++d) all.push_back(d);
    chorus::cuda::Team team(all);
    std::printf("%d GPUs, rings: %s\n", team.size(), team.ring_source().c_str());
    timed("all_reduce kernels vs twin", [&] { correctness(team); });
    timed("other collectives vs twin", [&] { collectives(team); });
    timed("transfers", [&] { transfers(team); });
  }
  return gpu_checks::summary();
}
