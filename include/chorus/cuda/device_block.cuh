// The device's Block: the primitives a kernel body (cuda/kernel/) uses, on a CUDA thread block. Flags
// are system-scope acquire loads and release stores (peers are other GPUs or the host; `.gpu` scope
// would cover one device only), LL lines single 8-byte relaxed system-scope atomics, and every spin is
// bounded by %globaltimer.
#pragma once

#if !defined(__CUDACC__)
#error "chorus: <chorus/cuda/*.cuh> is device code: compile this unit with nvcc"
#endif

#include <cuda/atomic>

#include <cstdint>

#include "../core/config.hpp"
#include "kernel/rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Threads per block every kernel is compiled for (__launch_bounds__): the compiler keeps register use low
// enough that a block of this many threads fits an SM, for every element type (cuda::Team relies on it
// for co-residency).
inline constexpr int kMaxThreadsPerBlock = 1024;

__device__ inline std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

class DeviceBlock {
 public:
  // `block` is this block's index among its rank's blocks (virtual ranks share one grid); `aborted`: the
  // rank's Signals::aborted word, which the host sets to release every waiting kernel.
  __device__ DeviceBlock(int block, std::uint64_t timeout_ns, const std::uint32_t* aborted)
      : block_(block), deadline_(global_timer_ns() + timeout_ns), aborted_(aborted) {}

  __device__ int lane() const { return static_cast<int>(threadIdx.x); }
  __device__ int lanes() const { return static_cast<int>(blockDim.x); }
  __device__ int block() const { return block_; }

  __device__ void sync() const { __syncthreads(); }
  __device__ bool sync_or(bool flag) const { return __syncthreads_or(flag ? 1 : 0) != 0; }

  __device__ std::uint32_t load_acquire(const std::uint32_t* flag) const {
    ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_system> ref(*const_cast<std::uint32_t*>(flag));
    return ref.load(::cuda::memory_order_acquire);
  }
  __device__ void store_release(std::uint32_t* flag, std::uint32_t value) const {
    ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_system> ref(*flag);
    ref.store(value, ::cuda::memory_order_release);
  }
  __device__ std::uint64_t load_line(const std::uint64_t* line) const {
    ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_system> ref(*const_cast<std::uint64_t*>(line));
    return ref.load(::cuda::memory_order_relaxed);
  }
  __device__ void store_line(std::uint64_t* line, std::uint64_t value) const {
    ::cuda::atomic_ref<std::uint64_t, ::cuda::thread_scope_system> ref(*line);
    ref.store(value, ::cuda::memory_order_relaxed);
  }
  __device__ bool claim(std::uint32_t* word) const {
    ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_system> ref(*word);
    std::uint32_t expected = 0;
    return ref.compare_exchange_strong(expected, 1u, ::cuda::memory_order_acq_rel);
  }
  __device__ void fence_system() const { __threadfence_system(); }

  // Past the deadline, or aborted by the host: either way the wait gives up.
  __device__ bool expired() const { return global_timer_ns() > deadline_ || load_acquire(aborted_) != 0; }
  __device__ void backoff() const { __nanosleep(64); }

  // Seeded skew before waits (testing): reproducible per rank, block, lane and step.
  __device__ void delay(const kernel::RankView& view, std::uint32_t step) const {
    if (view.delay_seed == 0) return;
    std::uint32_t h = view.delay_seed ^ (static_cast<std::uint32_t>(view.rank) * 0x9e3779b9u) ^
                      (static_cast<std::uint32_t>(block_) << 8) ^ (threadIdx.x << 16) ^ (step * 0x85ebca6bu);
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    if (h % 4 == 0) __nanosleep(h % 20000);
  }

 private:
  int block_;
  std::uint64_t deadline_;
  const std::uint32_t* aborted_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
