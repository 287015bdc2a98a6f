// The bounded waits behind every NCCL wait, polling ncclCommGetAsyncError all along, since a failed
// peer shows up there and never on the stream, which would then run forever. On an asynchronous error,
// a failing stream or CHORUS_TIMEOUT_MS, the communicator is aborted (ncclCommAbort) exactly once and
// chorus::Error names the call: an aborted communicator releases this rank's kernels, and its peers see
// the abort as ncclRemoteError instead of hanging.
//
//   wait_for_nccl   until a nonblocking init, split, finalize or call has finished in the background
//                   (stream_done() is then always true), or until awaited work is done
//   wait_for_work   a view's wait(): two phases, so that work the caller queued on the stream ahead of
//                   this communicator's is never held against it (handle.hpp records the events):
//                   1. until the stream reaches this communicator's oldest unfinished call (reached()),
//                      bounded by CHORUS_KERNEL_TIMEOUT_MS (default 10 minutes); running past it
//                      throws `timeout` but does NOT abort: nothing of this communicator has run yet, so
//                      it is as healthy as it was, and the caller may wait again or abort it;
//                   2. then until its last call is done (stream_done()), bounded by CHORUS_TIMEOUT_MS
//                      from that moment, as wait_for_nccl (aborts on timeout).
//
// The decision logic is here, the NCCL and CUDA calls are in the Probe, so the CPU tests drive every
// path (done, in progress then done, async error, stream error, timeout) with a scripted probe:
//   bool reached()             (wait_for_work only) true once the stream has reached the awaited work;
//                              throws chorus::Error on a stream error
//   bool stream_done()         true once the awaited work is complete; throws chorus::Error on a stream error
//   ncclResult_t async_error() ncclCommGetAsyncError: ncclSuccess, ncclInProgress or the failure
//   std::string last_error()   ncclGetLastError's text
//   void abort()               ncclCommAbort
#pragma once

#include "nccl_header.hpp"

#include <cstdlib>
#include <string>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../runtime/wait.hpp"
#include "check.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {

// Bound of the first phase of a view's wait(): how long work queued ahead of this communicator's on the
// stream (the caller's compute, another communicator's calls) may keep the stream from reaching it. The
// bound on device work is one knob for every device communicator: CHORUS_KERNEL_TIMEOUT_MS (core/env.hpp).
inline long queue_timeout_ms() { return env::kernel_timeout_ms(); }

namespace detail {

// One poll of NCCL and the stream, shared by both waits: false while NCCL is in progress or `done` says
// so; an asynchronous error or a stream error aborts the communicator (once) and throws.
template <class Probe>
class Poller {
 public:
  Poller(Probe& probe, const char* call, RankName rank) : probe_(probe), call_(call), rank_(rank) {}

  template <class Done>
  bool ready(const std::string& what, Done&& done) {
    const ncclResult_t state = probe_.async_error();
    if (state == ncclInProgress) return false;
    if (state != ncclSuccess) {
      const std::string text = probe_.last_error();
      abort_once();
      Error cause = nccl_error(state, call_, rank_, "ncclCommGetAsyncError", text);
      throw Error(cause.code(), chorus::detail::concat(cause.what(), " (while waiting for ", what,
                                                       "; the communicator is aborted)"));
    }
    try {
      return done();
    } catch (...) {
      abort_once();
      throw;
    }
  }

  void abort_once() {
    if (!aborted_) probe_.abort();
    aborted_ = true;
  }

 private:
  Probe& probe_;
  const char* call_;
  RankName rank_;
  bool aborted_ = false;
};

}  // namespace detail

// `what` ends "waited N ms for <what>": "stream 0x.. to finish all_reduce (call 7 on this communicator)".
template <class Probe>
void wait_for_nccl(Probe& probe, const char* call, RankName rank, const std::string& what, long timeout_ms) {
  detail::Poller<Probe> poller(probe, call, rank);
  runtime::wait_until(
      timeout_ms, runtime::WaitPolicy::yields(1), [&] { return poller.ready(what, [&] { return probe.stream_done(); }); },
      [] {},
      [&]() -> long {
        poller.abort_once();
        throw make_error(ErrorCode::timeout, call, rank, "waited ", timeout_ms, " ms (CHORUS_TIMEOUT_MS) for ", what,
                         "; the communicator is aborted (ncclCommAbort), so its peers stop waiting too");
      });
}

// A view's wait (above): `reach` says what phase 1 waits for ("stream 0x.. to reach all_reduce (call 7
// on this communicator)"), `finish` what phase 2 waits for.
template <class Probe>
void wait_for_work(Probe& probe, const char* call, RankName rank, const std::string& reach, const std::string& finish,
                   long timeout_ms, long queue_timeout_ms) {
  {
    detail::Poller<Probe> poller(probe, call, rank);
    runtime::wait_until(
        queue_timeout_ms, runtime::WaitPolicy::yields(1),
        [&] { return poller.ready(reach, [&] { return probe.reached(); }); }, [] {},
        [&]() -> long {
          throw make_error(ErrorCode::timeout, call, rank, "waited ", queue_timeout_ms,
                           " ms (CHORUS_KERNEL_TIMEOUT_MS) for ", reach,
                           ": work queued ahead of it on the stream (not this communicator's) is still running; "
                           "the communicator is not aborted and stays usable (wait again, or abort it)");
        });
  }
  wait_for_nccl(probe, call, rank, finish, timeout_ms);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
