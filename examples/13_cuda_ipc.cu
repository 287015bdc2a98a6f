// Example 13: chorus's own GPU kernels between processes, one process per GPU, over CUDA IPC. Processes
// start under mpirun; each picks its GPU from its local rank and creates a cuda::IpcComm over MPI: the
// ranks exchange fixed-size records (version, GPU bus id, the blocks each GPU keeps resident, then the
// scratch layout and IPC handles of the memory each allocated) through MPI's all_gather, and each opens
// its peers' memory. Then every process launches ONLY ITS OWN kernel on its own stream, and the kernels
// meet through that shared memory.
//
//   mpirun -np 2 ./13_cuda_ipc            # one machine, two GPUs (several processes on one GPU are refused)
//
// Each rank all-reduces rank-dependent integers (exact in any order) with each kernel and checks the sum.
// Without enough GPUs it prints why and exits 77 (skipped). NOT YET RUN ON A GPU (docs/cuda/ipc.md).
#include <chorus/bootstrap.hpp>
#include <chorus/cuda.hpp>
#include <chorus/mpi.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
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
  int wrong = 0;
  try {
    const int device = chorus::bootstrap::local_device(devices, launch);
    cuda_ok(cudaSetDevice(device), "cudaSetDevice");
    auto comm = chorus::cuda::IpcComm::create(host, device);  // collective over MPI
    const std::size_t count = 1u << 20;
    std::vector<int> mine(count), sum(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = static_cast<int>(i % 1000) * (host.rank() + 1);
    int* data = nullptr;
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(int)), "cudaMalloc");
    cudaStream_t stream = nullptr;
    cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const int n = host.size();
    for (chorus::Algorithm algorithm :
         {chorus::Algorithm::one_shot, chorus::Algorithm::two_shot, chorus::Algorithm::ring, chorus::Algorithm::automatic}) {
      cuda_ok(cudaMemcpy(data, mine.data(), count * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
      comm.on(stream).all_reduce(data, data, count, chorus::ReduceOp::sum, algorithm);  // in place
      comm.wait();                                                                       // bounded
      cuda_ok(cudaMemcpy(sum.data(), data, count * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (std::size_t i = 0; i < count; ++i) wrong += sum[i] != static_cast<int>(i % 1000) * n * (n + 1) / 2 ? 1 : 0;
      if (host.rank() == 0) std::printf("%-9s all_reduce of %zu ints over %d processes: %s\n", chorus::to_string(algorithm), count, n,
                                        wrong == 0 ? "correct" : "WRONG");
    }
    host.barrier();  // no peer's kernel still reads this rank's memory when it is freed
    cuda_ok(cudaStreamDestroy(stream), "cudaStreamDestroy");
    cuda_ok(cudaFree(data), "cudaFree");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", host.rank(), e.what());
    return 1;
  }
  return wrong == 0 ? 0 : 1;
}
