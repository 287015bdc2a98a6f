// Turns a CUDA runtime return code into chorus::Error naming the chorus call, the rank, the CUDA
// function and CUDA's own message ("cudaMalloc failed: out of memory (cudaErrorMemoryAllocation)").
#pragma once

#include "runtime_header.hpp"

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Out of memory is the caller's to fix (a smaller size, fewer ranks); a missing or busy device is a
// build or machine limit; anything else is internal: chorus asked the runtime for something wrong.
inline ErrorCode error_code_of(cudaError_t status) {
  switch (status) {
    case cudaErrorMemoryAllocation:
    case cudaErrorInvalidValue:
      return ErrorCode::invalid_argument;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNotSupported:
    case cudaErrorPeerAccessUnsupported:
    case cudaErrorCooperativeLaunchTooLarge:
      return ErrorCode::unsupported;
    default:
      return ErrorCode::internal;
  }
}

inline void check_cuda(cudaError_t status, const char* call, RankName rank, const char* function) {
  if (status == cudaSuccess) return;
  throw make_error(error_code_of(status), call, rank, function, " failed: ", cudaGetErrorString(status), " (",
                   cudaGetErrorName(status), ")");
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
