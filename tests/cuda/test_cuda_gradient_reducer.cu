// DeviceGradientReducer on a GPU: 4 virtual ranks of cuda::Team on GPU 0, one thread per rank, gradients in
// device memory produced on each rank's own compute stream, the bucket all-reduces on one shared comm
// stream (virtual ranks launch together), fp32/fp64/half/bf16 tensors and a zero-length one, each rank
// marking in its own order, with and without fp16 compression. The values are small integers, so every
// mean is exact and must come back bit for bit (tests/cuda_twin/test_twin_gradient_reducer.cpp runs the
// same on the CPU twin). Plain main, as the other GPU tests; exits 77 when no GPU is visible.
#include <chorus/cuda.hpp>
#include <chorus/parallel/device_gradient_reducer.hpp>

#include "gpu_checks.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace {

using chorus::DataType;
using chorus::parallel::FinishWait;
using chorus::parallel::GradientCompression;
using chorus::parallel::ParamView;
using chorus::parallel::ReducerOptions;
using gpu_checks::check;
using gpu_checks::expect;
using Reducer = chorus::parallel::DeviceGradientReducer<chorus::cuda::RankComm, chorus::cuda::CudaDevice>;

constexpr int kRanks = 4;
constexpr std::size_t kCounts[5] = {1000, 513, 77, 130, 37};  // float32, float64, half, bfloat16, float32
constexpr DataType kTypes[5] = {DataType::float32, DataType::float64, DataType::float16, DataType::bfloat16, DataType::float32};

float value(int rank, std::size_t tensor, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 3 + tensor) % 16) - 8);
}

// Tensor t of rank `rank` as the bytes of its type.
std::vector<unsigned char> host_tensor(int rank, std::size_t t) {
  std::vector<float> values(kCounts[t]);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = value(rank, t, i);
  std::vector<unsigned char> bytes(kCounts[t] * chorus::size_of(kTypes[t]));
  chorus::copy_floating(values.data(), DataType::float32, bytes.data(), kTypes[t], values.size());
  return bytes;
}

// One rank's iteration; what it found wrong, as text.
std::vector<std::string> run_rank(chorus::cuda::RankComm comm, int rank, GradientCompression compression) {
  std::vector<std::string> found;
  cudaStream_t compute;
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<void*> device(5, nullptr);
  std::vector<ParamView> views;
  for (std::size_t t = 0; t < 5; ++t) {
    const auto bytes = host_tensor(rank, t);
    check(cudaMalloc(&device[t], bytes.size()), "cudaMalloc");
    check(cudaMemcpy(device[t], bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    views.push_back({"t" + std::to_string(t), kTypes[t], device[t], kCounts[t]});
  }
  views.insert(views.begin() + 3, ParamView{"empty", DataType::float32, nullptr, 0});
  try {
    ReducerOptions options;
    options.buckets.first_bucket_bytes = 1024;
    options.buckets.bucket_cap_bytes = 4096;
    options.compression = compression;
    Reducer reducer(comm, chorus::cuda::CudaDevice(0), views, compute, options);
    std::vector<std::size_t> order = {0, 1, 2, 3, 4, 5};
    if (rank % 2 == 1) order = {5, 3, 1, 4, 0, 2};
    for (std::size_t t : order) reducer.mark_ready(t);
    reducer.finish(FinishWait::host);
    for (std::size_t t = 0; t < 5; ++t) {
      std::vector<unsigned char> bytes(kCounts[t] * chorus::size_of(kTypes[t]));
      check(cudaMemcpy(bytes.data(), device[t], bytes.size(), cudaMemcpyDeviceToHost), "cudaMemcpy back");
      std::vector<float> got(kCounts[t]);
      chorus::copy_floating(bytes.data(), kTypes[t], got.data(), DataType::float32, got.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        float sum = 0;
        for (int r = 0; r < kRanks; ++r) sum += value(r, t, i);
        if (got[i] != sum / kRanks) {
          found.push_back("tensor " + std::to_string(t) + "[" + std::to_string(i) + "] is " + std::to_string(got[i]) +
                          ", want " + std::to_string(sum / kRanks));
          break;
        }
      }
    }
  } catch (const std::exception& e) {
    found.push_back(std::string("threw: ") + e.what());
  }
  for (void* p : device) cudaFree(p);
  cudaStreamDestroy(compute);
  return found;
}

}  // namespace

int main() {
  gpu_checks::gpus_or_skip();
  for (const GradientCompression compression : {GradientCompression::none, GradientCompression::fp16}) {
    auto team = chorus::cuda::Team::virtual_ranks(0, kRanks);
    cudaStream_t comm_stream;
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    std::vector<std::vector<std::string>> found(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] { found[static_cast<std::size_t>(r)] = run_rank(team.comm(r).on(comm_stream), r, compression); });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < kRanks; ++r) {
      for (const std::string& f : found[static_cast<std::size_t>(r)]) {
        expect(false, "compression " + std::to_string(static_cast<int>(compression)) + ", rank " + std::to_string(r) + ": " + f);
      }
    }
    team.synchronize();
    cudaStreamDestroy(comm_stream);
    std::printf("device gradient reducer, %d virtual ranks, compression %d: checked\n", kRanks, static_cast<int>(compression));
  }
  return gpu_checks::summary();
}
