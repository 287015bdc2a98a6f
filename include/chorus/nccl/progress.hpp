// The bounded wait behind every NCCL wait: until the stream is done (or, with no stream, until a
// nonblocking init, split or finalize has finished), polling ncclCommGetAsyncError all along, since a
// failed peer shows up there and never on the stream, which would then run forever. On an asynchronous
// error, a failing stream or CHORUS_TIMEOUT_MS, the communicator is aborted (ncclCommAbort) exactly once
// and chorus::Error names the call: an aborted communicator releases this rank's kernels, and its
// peers see the abort as ncclRemoteError instead of hanging.
//
// The decision logic is here, the NCCL and CUDA calls are in the Probe, so the CPU tests drive every
// path (done, in progress then done, async error, stream error, timeout) with a scripted probe:
//   bool stream_done()         true once the awaited work is complete; throws chorus::Error on a stream error
//   ncclResult_t async_error() ncclCommGetAsyncError: ncclSuccess, ncclInProgress or the failure
//   std::string last_error()   ncclGetLastError's text
//   void abort()               ncclCommAbort
#pragma once

#include "nccl_header.hpp"

#include <string>

#include "../core/error.hpp"
#include "../runtime/wait.hpp"
#include "check.hpp"

namespace chorus::nccl {

// `what` ends "waited N ms for <what>": "all_reduce (call 7) to finish on stream 0x..".
template <class Probe>
void wait_for_nccl(Probe& probe, const char* call, RankName rank, const std::string& what, long timeout_ms) {
  bool aborted = false;
  auto abort_once = [&] {
    if (!aborted) probe.abort();
    aborted = true;
  };
  auto ready = [&] {
    const ncclResult_t state = probe.async_error();
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess) {
      const std::string text = probe.last_error();
      abort_once();
      Error cause = nccl_error(state, call, rank, "ncclCommGetAsyncError", text);
      throw Error(cause.code(), chorus::detail::concat(cause.what(), " (while waiting for ", what,
                                               "; the communicator is aborted)"));
    }
    try {
      return probe.stream_done();
    } catch (...) {
      abort_once();
      throw;
    }
  };
  runtime::wait_until(timeout_ms, runtime::WaitPolicy::yields(1), ready, [] {}, [&]() -> long {
    abort_once();
    throw make_error(ErrorCode::timeout, call, rank, "waited ", timeout_ms, " ms (CHORUS_TIMEOUT_MS) for ", what,
                     "; the communicator is aborted (ncclCommAbort), so its peers stop waiting too");
  });
}

}  // namespace chorus::nccl
