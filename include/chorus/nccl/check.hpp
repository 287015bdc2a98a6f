// Turns an NCCL return code into chorus::Error naming the chorus call, the rank, the NCCL function and
// NCCL's own words: its message for the code (ncclGetErrorString) and, where the communicator has one,
// the last error it recorded (ncclGetLastError), which says what was wrong ("invalid root 5").
#pragma once

#include "nccl_header.hpp"

#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {

inline const char* result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

// Bad arguments and misuse are the caller's to fix; a remote error is another rank's failure (NCCL's
// proxy lost a peer); a CUDA or system failure inside NCCL, or an NCCL bug, is internal. ncclInProgress
// is not a failure and never reaches here (the callers poll it away, progress.hpp).
inline ErrorCode error_code_of(ncclResult_t result) {
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: return ErrorCode::invalid_argument;
    case ncclRemoteError: return ErrorCode::peer_failed;
    default: return ErrorCode::internal;
  }
}

// "ncclAllReduce failed: invalid argument (run with NCCL_DEBUG=WARN for details) (ncclInvalidArgument):
// Invalid root 5". `last_error` is ncclGetLastError's text (empty when there is none).
// The callers go through their Api (library.hpp), so the tests' fake NCCL can stand in.
inline Error nccl_error(ncclResult_t result, const char* call, RankName rank, const char* function,
                        const std::string& last_error) {
  return make_error(error_code_of(result), call, rank, function, " failed: ", ncclGetErrorString(result), " (",
                    result_name(result), ")", last_error.empty() ? "" : ": ", last_error);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
