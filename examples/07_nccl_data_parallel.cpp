// Example 07 (NCCL): data-parallel training with one process per GPU, the way PyTorch DDP and Megatron
// run: processes start under mpirun (or torchrun), each picks its GPU from its local rank, rank 0's
// NCCL unique id travels over MPI, and the gradients are averaged by NCCL on the GPU.
//
//   mpirun -np 4 ./07_nccl_data_parallel            # one machine, four GPUs
//
// The steps are what a real training loop does around NCCL:
//   bootstrap::local_device(count)        which GPU this process drives (its local rank)
//   nccl::Comm::unique_id() on rank 0     the 128-byte id NCCL needs on every rank, sent with
//   bootstrap::broadcast_object(mpi, id)  any host communicator: here MPI
//   nccl::Comm::init_rank(size, id, rank) the GPU communicator
//   comm.on(stream)                       the communicator contract on a stream: broadcast the initial
//                                         weights, all-reduce (avg) the gradients, then wait (bounded)
// The model is a linear regression whose gradient the host computes (so the example needs no kernels of
// its own; in a real model backward kernels write the gradients straight into device memory). Rank 0
// then trains the same model alone on the whole batch and checks that the loss curves agree: averaging
// equal shards' gradients is the whole batch's gradient.
//
// Without a GPU it prints why and exits 77 (skipped), as it does with more processes on a node than GPUs.
#include <chorus/bootstrap.hpp>
#include <chorus/mpi.hpp>
#include <chorus/nccl.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kFeatures = 16;
constexpr std::size_t kGlobalBatch = 96;
constexpr int kSteps = 12;
constexpr float kLearningRate = 0.05f;

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// Sample i of a fixed synthetic data set: y = x . true_w + 0.5 + a little noise.
struct Sample {
  float x[kFeatures];
  float y;
};
Sample sample(std::size_t i) {
  std::mt19937 rng(static_cast<unsigned>(1000 + i));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Sample s{};
  s.y = 0.5f + 0.01f * u(rng);
  for (int f = 0; f < kFeatures; ++f) {
    s.x[f] = u(rng);
    s.y += s.x[f] * (static_cast<float>(f % 5) - 2.0f);
  }
  return s;
}

// Weights and bias in one vector (so one call moves them); the mean squared error over samples
// [first, first + count) and its gradient.
float loss_and_gradient(const std::vector<float>& w, std::size_t first, std::size_t count, std::vector<float>& grad) {
  grad.assign(w.size(), 0.0f);
  float loss = 0.0f;
  for (std::size_t i = first; i < first + count; ++i) {
    const Sample s = sample(i);
    float prediction = w[kFeatures];
    for (int f = 0; f < kFeatures; ++f) prediction += w[static_cast<std::size_t>(f)] * s.x[f];
    const float error = prediction - s.y;
    loss += error * error;
    for (int f = 0; f < kFeatures; ++f) grad[static_cast<std::size_t>(f)] += 2.0f * error * s.x[f];
    grad[kFeatures] += 2.0f * error;
  }
  const float n = static_cast<float>(count);
  for (float& g : grad) g /= n;
  return loss / n;
}

std::vector<float> initial_weights(unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> w(kFeatures + 1);
  for (float& x : w) x = normal(rng);
  return w;
}

// The loss curve of data-parallel training over `gpu`; the weights live on the host, and every byte
// that crosses ranks goes through NCCL on the GPU.
std::vector<float> train_on_gpus(chorus::nccl::Comm& comm, cudaStream_t stream) {
  auto gpu = comm.on(stream);
  const std::size_t n = kFeatures + 1;
  float* device = nullptr;  // n floats of gradient, then one of loss
  cuda_ok(cudaMalloc(reinterpret_cast<void**>(&device), (n + 1) * sizeof(float)), "cudaMalloc");
  std::vector<float> w = initial_weights(static_cast<unsigned>(7 + comm.rank()));  // differ on purpose
  // Everyone starts from rank 0's weights.
  cuda_ok(cudaMemcpyAsync(device, w.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  gpu.broadcast(device, device, n, 0);
  cuda_ok(cudaMemcpyAsync(w.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  gpu.wait();

  const std::size_t shard = kGlobalBatch / static_cast<std::size_t>(comm.size());
  std::vector<float> losses, grad;
  for (int step = 0; step < kSteps; ++step) {
    float loss = loss_and_gradient(w, shard * static_cast<std::size_t>(comm.rank()), shard, grad);
    grad.push_back(loss);  // the loss rides along with the gradient: one all-reduce for both
    cuda_ok(cudaMemcpyAsync(device, grad.data(), (n + 1) * sizeof(float), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    gpu.all_reduce(device, device, n + 1, chorus::ReduceOp::avg);
    cuda_ok(cudaMemcpyAsync(grad.data(), device, (n + 1) * sizeof(float), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    gpu.wait();  // bounded by CHORUS_TIMEOUT_MS: a lost peer is an error, not a hang
    losses.push_back(grad[n]);
    for (std::size_t k = 0; k < n; ++k) w[k] -= kLearningRate * grad[k];
  }
  cudaFree(device);
  return losses;
}

std::vector<float> train_alone() {
  std::vector<float> w = initial_weights(7), grad, losses;
  for (int step = 0; step < kSteps; ++step) {
    losses.push_back(loss_and_gradient(w, 0, kGlobalBatch, grad));
    for (std::size_t k = 0; k < w.size(); ++k) w[k] -= kLearningRate * grad[k];
  }
  return losses;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  chorus::mpi::Comm host(MPI_COMM_WORLD);
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  const chorus::bootstrap::LaunchInfo launch = chorus::bootstrap::launch_info();
  if (status != cudaSuccess || devices == 0 || launch.local_size > devices) {
    if (host.rank() == 0) {
      std::printf("skipped: %d GPU(s) visible (%s) for %d process(es) on this node; one process per GPU\n", devices,
                  cudaGetErrorString(status), launch.local_size > 0 ? launch.local_size : 1);
    }
    return 77;
  }
  if (kGlobalBatch % static_cast<std::size_t>(host.size()) != 0) {
    if (host.rank() == 0) std::fprintf(stderr, "run with a process count that divides %zu\n", kGlobalBatch);
    return 2;
  }
  try {
    cuda_ok(cudaSetDevice(chorus::bootstrap::local_device(devices, launch)), "cudaSetDevice");
    ncclUniqueId id{};
    if (host.rank() == 0) id = chorus::nccl::Comm::unique_id();
    chorus::bootstrap::broadcast_object(host, id);
    chorus::nccl::Comm comm = chorus::nccl::Comm::init_rank(host.size(), id, host.rank());
    cudaStream_t stream = nullptr;
    cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
    const std::vector<float> split = train_on_gpus(comm, stream);
    cudaStreamDestroy(stream);
    if (host.rank() == 0) {
      const std::vector<float> whole = train_alone();
      std::printf("step   %d GPUs x %zu samples   1 rank x %zu samples\n", host.size(),
                  kGlobalBatch / static_cast<std::size_t>(host.size()), kGlobalBatch);
      bool same = true;
      for (int s = 0; s < kSteps; ++s) {
        const float a = split[static_cast<std::size_t>(s)], b = whole[static_cast<std::size_t>(s)];
        std::printf("%4d   %19.6f   %19.6f\n", s, static_cast<double>(a), static_cast<double>(b));
        same = same && std::fabs(a - b) <= 1e-4f * std::fmax(1.0f, std::fabs(b));
      }
      std::printf(same ? "the loss curves agree across GPUs\n" : "WRONG: the loss curves differ\n");
      if (!same) MPI_Abort(MPI_COMM_WORLD, 1);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", host.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 0;
}
