// cuda::IpcComm on a real GPU, within what one process can check: CUDA IPC handles cannot be opened by the
// process that made them, so ranks on host threads of one process can only be one rank, or be refused. With
// one rank (host::Team(1)): every collective through the view, typed and type-erased, must give the exact
// single-rank result; barrier, split (colour 0: a one-rank communicator that works; -1: a null one), and
// the refusals (a send to itself, calls on a null or moved-from communicator, host waits during stream
// capture, calls after abort()); two host-thread ranks on one GPU must both get the "one GPU per rank"
// Error (the record exchange, no IPC open). The driver itself (cuda/basic_ipc_comm.hpp) is proven on the
// CPU twin (tests/cuda_twin/test_twin_ipc.cpp). Several processes need MPI: examples/13_cuda_ipc.cu under mpirun.
// Exits 77 (skipped) when no GPU is visible. First run on an H200 on 2026-12-04 (docs/gpu-validation.md).
#include <chorus/cuda.hpp>
#include <chorus/host.hpp>

#include "gpu_checks.hpp"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using chorus::Algorithm;
using chorus::ReduceOp;

namespace {

using gpu_checks::check;
using gpu_checks::expect;

// One rank: all_reduce and the others copy the input; each kernel, typed and type-erased.
void one_rank() {
  chorus::host::Team team(1);
  team.run([&](chorus::host::Comm& host) {
    auto comm = chorus::cuda::IpcComm::create(host, 0);
    std::printf("one rank: %d blocks\n", comm.blocks());
    const std::size_t count = 4099;
    std::vector<float> input(count);
    for (std::size_t i = 0; i < count; ++i) input[i] = static_cast<float>(i % 97) - 48.0f;
    float* send = nullptr;
    float* recv = nullptr;
    check(cudaMalloc(reinterpret_cast<void**>(&send), count * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&recv), count * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(send, input.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    auto view = comm.on(stream);
    const auto expect_copy = [&](const std::string& what) {
      comm.wait();
      std::vector<float> got(count);
      check(cudaMemcpy(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      expect(got == input, what);
      check(cudaMemset(recv, 0, count * sizeof(float)), "cudaMemset");
    };
    for (Algorithm algorithm : {Algorithm::one_shot, Algorithm::two_shot, Algorithm::ring, Algorithm::automatic}) {
      view.all_reduce(send, recv, count, ReduceOp::sum, algorithm);
      expect_copy(std::string("all_reduce ") + chorus::to_string(algorithm));
    }
    view.all_reduce(static_cast<const void*>(send), static_cast<void*>(recv), count, chorus::DataType::float32, ReduceOp::max);
    expect_copy("type-erased all_reduce");
    view.broadcast(send, recv, count, 0);
    expect_copy("broadcast");
    view.reduce(send, recv, count, ReduceOp::sum, 0);
    expect_copy("reduce");
    view.all_gather(send, recv, count, Algorithm::ring);
    expect_copy("all_gather ring");
    view.reduce_scatter(send, recv, count, ReduceOp::sum, Algorithm::direct);
    expect_copy("reduce_scatter direct");
    view.all_to_all(static_cast<const void*>(send), static_cast<void*>(recv), count, chorus::DataType::float32);
    expect_copy("type-erased all_to_all");
    bool refused = false;
    try {
      view.all_reduce<float>(nullptr, recv, count, ReduceOp::sum);
    } catch (const chorus::Error& e) {
      refused = std::string(e.what()).find("send buffer is null") != std::string::npos;
    }
    expect(refused, "a null buffer is refused before launching");
    const auto refusal = [&](const std::function<void()>& call) -> std::string {
      try {
        call();
      } catch (const chorus::Error& e) {
        return e.what();
      }
      return "";
    };
    comm.barrier();  // a one-int all_reduce, waited for
    view.barrier();
    expect(refusal([&] { view.send(send, count, 0); }).find("is this rank itself") != std::string::npos, "a send to itself is refused");
    // split: colour 0 gives a one-rank communicator with its own memory (records exchanged through this
    // one's kernels), colour -1 a null one.
    auto same = comm.split(0, 0);
    expect(same.size() == 1 && same.rank() == 0, "split(0, 0) of one rank is a one-rank communicator");
    same.on(stream).all_reduce(send, recv, count, ReduceOp::sum, Algorithm::ring);
    same.wait();
    {
      std::vector<float> got(count);
      check(cudaMemcpy(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      expect(got == input, "all_reduce on the split communicator");
    }
    auto none = comm.split(-1, 0);
    expect(none.size() == 0 && none.rank() == -1, "split(-1, 0) is a null communicator");
    expect(refusal([&] { none.barrier(); }).find("null communicator") != std::string::npos, "a null communicator refuses calls");
    auto moved = std::move(same);
    expect(refusal([&] { same.wait(); }).find("null communicator (moved from") != std::string::npos,
           "wait on a moved-from communicator is chorus::Error");
    moved.barrier();
    // Host waits while the stream of the last call is being captured are refused, and the communicator
    // stays usable once the capture ends (nothing was captured).
    view.all_reduce(send, recv, count, ReduceOp::sum);
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    expect(refusal([&] { comm.wait(); }).find("being captured into a graph") != std::string::npos, "wait() during capture is refused");
    expect(refusal([&] { view.barrier(); }).find("being captured into a graph") != std::string::npos,
           "barrier() during capture is refused");
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    std::size_t nodes = 1;
    check(cudaGraphGetNodes(graph, nullptr, &nodes), "cudaGraphGetNodes");
    expect(nodes == 0, "the refused waits captured nothing");
    check(cudaGraphDestroy(graph), "cudaGraphDestroy");
    expect_copy("all_reduce before the capture, waited for after it");
    view.barrier();
    // abort(): the communicator's kernels give up their waits, wait() says who aborted, and it refuses calls.
    auto doomed = comm.split(0, 0);
    doomed.on(stream).all_reduce(send, recv, count, ReduceOp::sum);
    doomed.abort();
    expect(refusal([&] { doomed.wait(); }).find("rank 0 aborted the communicator") != std::string::npos,
           "wait() after abort() reports peer_failed naming the rank");
    expect(refusal([&] { doomed.barrier(); }).find("was aborted") != std::string::npos, "an aborted communicator refuses calls");
    check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    check(cudaFree(send), "cudaFree");
    check(cudaFree(recv), "cudaFree");
  });
}

// Two ranks of one process on one GPU: refused on both, by the record exchange, before any IPC open.
void same_gpu_refused() {
  chorus::host::Team team(2);
  std::vector<std::string> errors(2);
  team.run([&](chorus::host::Comm& host) {
    try {
      chorus::cuda::IpcComm::create(host, 0);
    } catch (const chorus::Error& e) {
      errors[static_cast<std::size_t>(host.rank())] = e.what();
    }
  });
  for (const std::string& error : errors) {
    expect(error.find("is also rank 0's") != std::string::npos, "two ranks on one GPU refused: got '" + error + "'");
  }
}

// A check that throws is one failure; the others still run.
void guarded(const char* name, void (*check_fn)()) {
  try {
    check_fn();
  } catch (const std::exception& e) {
    expect(false, std::string(name) + " threw: " + e.what());
  }
}

}  // namespace

int main() {
  gpu_checks::gpus_or_skip();
  guarded("one_rank", one_rank);
  guarded("same_gpu_refused", same_gpu_refused);
  return gpu_checks::summary();
}
