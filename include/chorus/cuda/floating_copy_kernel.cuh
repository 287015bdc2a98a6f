// The GPU body of Device::copy_floating (cuda/device/cuda_device.cuh): one grid-stride pass of
// chorus::convert_floating (core/floating_copy.hpp), the element function the host and the CPU twin run,
// so a bucket copy gives the same bits on all three. Bandwidth-bound and small next to the all-reduce;
// 256 threads a block and at most 1024 blocks keep every SM busy without a launch per megabyte.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/floating_copy.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class S, class D>
__global__ void floating_copy_kernel(const S* in, D* out, std::size_t n, double divisor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = convert_floating<S, D>(in[i], divisor);
  }
}

// Enqueues the kernel on `stream`; the caller checks cudaGetLastError.
inline void launch_floating_copy(const void* src, DataType src_type, void* dst, DataType dst_type, std::size_t n,
                                 double divisor, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 1024));
  visit_floating_pair(src_type, dst_type, [&](auto src_tag, auto dst_tag) {
    using S = decltype(src_tag);
    using D = decltype(dst_tag);
    floating_copy_kernel<S, D><<<blocks, kThreads, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst), n, divisor);
  });
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
