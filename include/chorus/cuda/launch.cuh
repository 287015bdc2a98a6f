// Launching ranks' blocks of chorus's kernels, shared by cuda::Team (every rank of this process; virtual
// ranks in one launch) and cuda::IpcComm (this process's one rank): how many blocks a device keeps
// resident, the per-kernel check that it really does, and the cooperative launch that relies on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "device_block.cuh"
#include "kernel/rank_view.hpp"
#include "runtime_check.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// The most blocks per rank `device` keeps resident at once for `ranks` ranks in one launch. Every kernel
// is compiled with __launch_bounds__(kMaxThreadsPerBlock), so the compiler fits a block of up to 1024
// threads on one SM for every element type: one block per SM is certain without asking about each
// type's kernel (which would compile all ten into every program). ensure_kernel_fits confirms it per
// kernel at its first launch.
inline int max_resident_blocks(int device, int ranks, const char* call, int rank) {
  int sms = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), call, rank, "cudaDeviceGetAttribute");
  return std::min(kernel::kMaxBlocks, sms / ranks);
}

// Asks the occupancy API, once per kernel (entry point and element type; `checked` remembers), whether
// `ranks` x `blocks` blocks of `threads` fit `device` at once; an `unsupported` error naming the numbers
// if not (a cooperative launch that does not fit would fail anyway, less clearly). Sets the current device.
inline void ensure_kernel_fits(std::vector<const void*>& checked, const void* kernel, DataType type, int device, int threads,
                               int ranks, int blocks, const char* call, int rank) {
  if (std::find(checked.begin(), checked.end(), kernel) != checked.end()) return;
  check_cuda(cudaSetDevice(device), call, rank, "cudaSetDevice");
  int sms = 0, per_sm = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), call, rank, "cudaDeviceGetAttribute");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0), call, rank,
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (per_sm * sms < blocks * ranks) {
    throw make_error(ErrorCode::unsupported, call, rank, "the ", to_string(type), " kernel fits ", per_sm, " blocks of ", threads,
                     " threads per SM on device ", device, " (", sms, " SMs), fewer than the launch's ", blocks * ranks,
                     "; use fewer threads, blocks or ranks");
  }
  checked.push_back(kernel);
}

// One cooperative launch of `ranks` ranks' blocks (grid = ranks x blocks; the kernel's rank is
// first_rank + blockIdx.x / blocks): every block resident at once, so no block waits for one that never
// gets an SM. `args`: the kernel's parameters, as cudaLaunchCooperativeKernel takes them.
inline void launch_rank_blocks(const void* kernel, void** args, int ranks, int blocks, int threads, cudaStream_t stream,
                               const char* call, int first_rank) {
  const dim3 grid(static_cast<unsigned>(blocks * ranks));
  check_cuda(cudaLaunchCooperativeKernel(kernel, grid, dim3(static_cast<unsigned>(threads)), args, 0, stream), call, first_rank,
             "cudaLaunchCooperativeKernel");
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
