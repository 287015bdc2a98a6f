// One ncclComm_t and what chorus knows about it: its rank, size and device, whether NCCL is still setting
// it up (a nonblocking init or split inside a group finishes at the group's end), whether it was aborted
// and why, and the last call enqueued on it (for timeout messages). Comm and its stream views share it;
// the last owner finalizes and destroys it.
//
// It also owns the CUDA objects its views need, made on its device the first time they are needed and
// freed when it is destroyed: two events that mark where this communicator's work lies on the streams
// (a view's wait() waits for them, never for a whole stream: begin_work, end_work, wait) and one int of
// device memory, the operand of every barrier (barrier_flag).
//
// Every communicator chorus creates is nonblocking (config.blocking = 0): NCCL calls return at once,
// ncclInProgress where NCCL continues in the background, and chorus bounds each wait itself
// (progress.hpp). A blocking communicator could hang inside ncclCommInitRank, ncclCommFinalize or a
// collective's connection setup, where no timeout can reach it.
#pragma once

#include "nccl_header.hpp"

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../cuda/runtime_check.hpp"
#include "check.hpp"
#include "progress.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl::detail {

inline ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Makes `device` current for a scope: the CUDA calls a view makes itself (its events, the barrier's int,
// the in-place all_to_all's scratch; the legacy stream is a device's own) must go to its communicator's
// GPU, while one thread may be driving several. It switches, and restores the caller's device at the
// end, only when `device` is not current already: cudaSetDevice makes a context on the device it
// selects (CUDA 12 and later), so a guard that "restored" device 0 unconditionally would make one on
// GPU 0 for a caller that never used it. (A caller that never selected a device and drives a
// communicator on another GPU is restored to device 0 nonetheless: the runtime cannot say whether a
// device was ever selected, and ncclGroupEnd restores the device it found the same way.)
template <class Api>
class DeviceScope {
 public:
  DeviceScope(int device, RankName rank, const char* call) {
    cuda::check_cuda(Api::get_device(&saved_), call, rank, "cudaGetDevice");
    if (device >= 0 && device != saved_) {
      cuda::check_cuda(Api::set_device(device), call, rank, "cudaSetDevice");
      switched_ = true;
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope() {
    if (switched_) Api::set_device(saved_);
  }

 private:
  int saved_ = 0;
  bool switched_ = false;
};

// Lets this thread make the CUDA calls that stream capture in cudaStreamCaptureModeGlobal refuses
// (cudaMalloc, cudaFree: "potentially unsafe") while this or another thread captures a stream, and
// restores the thread's mode after. They are not stream work, so they cannot break a capture.
template <class Api>
class RelaxedCapture {
 public:
  RelaxedCapture() { changed_ = Api::exchange_capture_mode(&mode_) == cudaSuccess; }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;
  ~RelaxedCapture() {
    if (changed_) Api::exchange_capture_mode(&mode_);
  }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // the caller's after the first exchange
  bool changed_ = false;
};

// Whether work enqueued on `stream` now goes into a CUDA graph being captured rather than to the GPU.
// The legacy default stream answers cudaErrorStreamCaptureImplicit while another stream is captured
// (in global mode): nothing may be enqueued on it or synchronised with it then either, so it counts as
// captured.
template <class Api>
bool is_capturing(cudaStream_t stream, const char* call, RankName rank) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t result = Api::stream_is_capturing(stream, &status);
  if (result == cudaErrorStreamCaptureImplicit) return true;
  cuda::check_cuda(result, call, rank, "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;  // active, or invalidated (still capturing until it ends)
}

template <class Api>
class Handle {
 public:
  // Empty until NCCL fills slot(); `name` stands for the rank until settle() learns it.
  explicit Handle(RankName name) : rank_(name.rank), team_rank_(name.team_rank) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { close(); }

  ncclComm_t raw() const { return comm_; }
  // Where NCCL writes the communicator. It must outlive NCCL's background job: ncclCommInitRankConfig
  // writes it at once and again when the job ends, ncclCommSplit only when the job ends.
  ncclComm_t* slot() { return &comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  bool pending() const { return pending_; }
  bool aborted() const { return aborted_; }
  RankName name() const { return team_rank_ >= 0 && team_rank_ != rank_ ? RankName(rank_, team_rank_) : RankName(rank_); }

  // The NCCL version loaded at run time (what data_types.hpp checks against).
  int version(const char* call) {
    if (version_ == 0) check(Api::get_version(&version_), call, "ncclGetVersion");
    return version_;
  }

  // Throws unless calls may go to NCCL now.
  void ensure_usable(const char* call) const {
    if (aborted_) {
      throw make_error(abort_code_, call, name(), "the communicator was aborted earlier: ", abort_reason_);
    }
  }

  // A call was enqueued (or is about to be): counted and named for timeout messages.
  void note(const char* call) {
    ++calls_;
    last_call_ = call;
  }

  // An NCCL function's result: ncclInProgress waits (bounded) for NCCL to finish in the background;
  // a failure throws. An invalid argument NCCL refuses leaves the communicator usable (NCCL's rule);
  // the calls that could have left it half done abort it themselves.
  void check(ncclResult_t result, const char* call, const char* function) {
    if (result == ncclInProgress) {
      settle(call, function);
    } else if (result != ncclSuccess) {
      throw nccl_error(result, call, name(), function, Api::last_error(comm_));
    }
  }

  void check_cuda(cudaError_t status, const char* call, const char* function) const {
    cuda::check_cuda(status, call, name(), function);
  }

  // Until NCCL has nothing in progress on this communicator, then learns rank, size and device if it
  // did not know them yet.
  void settle(const char* call, const char* after) {
    if (comm_ == nullptr) return;  // nothing was made here (a split with a negative colour)
    struct Probe {
      Handle& self;
      bool stream_done() { return true; }
      ncclResult_t async_error() {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t result = Api::comm_get_async_error(self.comm_, &state);
        return result != ncclSuccess ? result : state;
      }
      std::string last_error() { return Api::last_error(self.comm_); }
      void abort() { self.abort_now(); }
    } probe{*this};
    guarded(call, [&] {
      wait_for_nccl(probe, call, name(), chorus::detail::concat(after, " to finish in the background"), env::timeout_ms());
    });
    if (pending_) {
      check(Api::comm_user_rank(comm_, &rank_), call, "ncclCommUserRank");
      check(Api::comm_count(comm_, &size_), call, "ncclCommCount");
      check(Api::comm_cu_device(comm_, &device_), call, "ncclCommCuDevice");
      pending_ = false;
    }
  }

  // Before the stream work of one chorus call is enqueued on `stream` (the caller has noted the call and
  // made this communicator's device current). Returns false, and marks nothing, while the stream is
  // being captured: the work goes into a graph, which wait() cannot see (an event recorded in a capture
  // is a graph node, not something the host can query). Otherwise marks where this communicator's work
  // starts: unless its earlier work is still unfinished, `start` is recorded here, so everything queued
  // ahead of it on the stream is known to be someone else's.
  bool begin_work(cudaStream_t stream, const char* call) {
    if (is_capturing<Api>(stream, call, name())) return false;
    if (start_ == nullptr) {
      cudaEvent_t start = nullptr;
      cudaEvent_t done = nullptr;
      check_cuda(Api::event_create(&start), call, "cudaEventCreateWithFlags");
      const cudaError_t made = Api::event_create(&done);
      if (made != cudaSuccess) Api::event_destroy(start);
      check_cuda(made, call, "cudaEventCreateWithFlags");
      start_ = start;
      done_ = done;
    }
    if (done_deferred_ || (recorded_ && !complete(done_, call))) return true;  // still busy: the start stays
    check_cuda(Api::event_record(start_, stream), call, "cudaEventRecord");
    start_stream_ = stream;
    start_call_ = last_call_;
    start_number_ = calls_;
    started_ = true;
    return true;
  }

  // After the stream work of a call that begin_work marked: `done` is recorded after it, now, or, inside
  // an open nccl::Group (whose calls NCCL enqueues only at its end), by record_deferred at the group's end.
  void end_work(cudaStream_t stream, const char* call, bool in_group) {
    if (in_group) {
      done_deferred_ = true;
      deferred_stream_ = stream;
      deferred_call_ = last_call_;
      deferred_number_ = calls_;
      return;
    }
    record_done(stream, call, last_call_, calls_);
  }

  // At the outermost group end, once NCCL has enqueued the group's work (and settled this communicator).
  void record_deferred(const char* call) {
    if (!done_deferred_) return;
    done_deferred_ = false;
    if (aborted_) return;
    const DeviceScope<Api> on_device(device_, name(), call);
    record_done(deferred_stream_, call, deferred_call_, deferred_number_);
  }

  // The int every barrier all-reduces in place (to 0: the sum of zeros), made on the first barrier and
  // freed with the communicator; NCCL orders one communicator's work, so barriers on several streams
  // may share it. cudaMalloc, not cudaMallocAsync: a first barrier inside a stream capture would
  // otherwise allocate from the graph, which owns what it allocates. It is zeroed on `stream`, ahead of
  // the barrier's all-reduce (inside a capture, whenever the graph runs; the value is never read).
  void* barrier_flag(cudaStream_t stream, const char* call) {
    if (flag_ != nullptr) return flag_;
    void* made = nullptr;
    {
      const RelaxedCapture<Api> relaxed;
      check_cuda(Api::malloc(&made, sizeof(int)), call, "cudaMalloc");
    }
    const cudaError_t zeroed = Api::memset_async(made, 0, sizeof(int), stream);
    if (zeroed != cudaSuccess) {
      const RelaxedCapture<Api> relaxed;
      Api::free(made);
      check_cuda(zeroed, call, "cudaMemsetAsync");
    }
    flag_ = made;
    return flag_;
  }

  // Until this communicator's work enqueued so far (outside captures) is done, watching for asynchronous
  // NCCL errors: first until the stream reaches its oldest unfinished call, bounded by
  // CHORUS_KERNEL_TIMEOUT_MS and never aborting (the work ahead of it is not this communicator's),
  // then until its last call is done, bounded by CHORUS_TIMEOUT_MS from then (progress.hpp).
  // The second bound starts when the host sees `start` complete, at the wait call at the earliest: CUDA
  // does not say when an event completed, so a wait called late gives the work more time, never less.
  // Work the caller queued on the stream before that oldest call never counts; work queued between
  // this communicator's calls does (one pair of events per communicator cannot tell it apart).
  // A stream being captured is refused before anything is polled: a host wait cannot be part of a graph,
  // and querying a capturing stream would invalidate the capture.
  void wait(cudaStream_t stream, const char* call) {
    ensure_usable(call);
    if (is_capturing<Api>(stream, call, name())) {
      throw make_error(ErrorCode::invalid_argument, call, name(), "stream ", static_cast<const void*>(stream),
                       " is being captured into a CUDA graph: a host wait cannot be captured. End the capture, and "
                       "wait after launching the graph (cudaStreamSynchronize or an event); the communicator is "
                       "unchanged");
    }
    if (done_deferred_) {
      throw make_error(ErrorCode::invalid_argument, call, name(), "called inside an open nccl::Group, whose calls (",
                       deferred_call_, ", call ", deferred_number_,
                       " on this communicator) NCCL enqueues only at the group's end: end the group first");
    }
    struct Probe {
      Handle& self;
      const char* call;
      bool reached() { return !self.started_ || self.complete(self.start_, call); }
      bool stream_done() { return !self.recorded_ || self.complete(self.done_, call); }
      ncclResult_t async_error() {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t result = Api::comm_get_async_error(self.comm_, &state);
        return result != ncclSuccess ? result : state;
      }
      std::string last_error() { return Api::last_error(self.comm_); }
      void abort() { self.abort_now(); }
    } probe{*this, call};
    if (!recorded_) {  // nothing of this communicator's on any stream: only NCCL's own state to check
      guarded(call, [&] { wait_for_nccl(probe, call, name(), "this communicator's background work", env::timeout_ms()); });
      return;
    }
    const std::string reach = chorus::detail::concat("stream ", static_cast<const void*>(start_stream_), " to reach ",
                                                     start_call_, " (call ", start_number_, " on this communicator)");
    const std::string finish = chorus::detail::concat(
        "stream ", static_cast<const void*>(done_stream_), " to finish ", done_call_, " (call ", done_number_,
        " on this communicator), timed from when ", start_call_, " (call ", start_number_, ") could start");
    guarded(call, [&] { wait_for_work(probe, call, name(), reach, finish, env::timeout_ms(), queue_timeout_ms()); });
  }

  // ncclCommAbort, once; later calls throw `code` with `reason`.
  void abort(ErrorCode code, const std::string& reason) {
    if (aborted_) return;
    abort_now();
    abort_code_ = code;
    abort_reason_ = reason;
  }

 private:
  // Runs a wait; a failure that aborted the communicator is remembered for the calls after it.
  template <class Fn>
  void guarded(const char* call, Fn&& fn) {
    try {
      fn();
    } catch (const Error& error) {
      if (aborted_ && abort_reason_.empty()) {
        abort_code_ = error.code();
        abort_reason_ = chorus::detail::concat(error.what(), " (in ", call, ")");
      }
      throw;
    }
  }

  // cudaEventQuery: true once everything before the event's record on its stream has run.
  bool complete(cudaEvent_t event, const char* call) const {
    const cudaError_t status = Api::event_query(event);
    if (status == cudaErrorNotReady) return false;
    check_cuda(status, call, "cudaEventQuery");
    return true;
  }

  void record_done(cudaStream_t stream, const char* call, const char* chorus_call, std::uint64_t number) {
    check_cuda(Api::event_record(done_, stream), call, "cudaEventRecord");
    done_stream_ = stream;
    done_call_ = chorus_call;
    done_number_ = number;
    recorded_ = true;
  }

  void abort_now() {
    if (aborted_ || comm_ == nullptr) return;
    aborted_ = true;
    const ncclResult_t result = Api::comm_abort(comm_);
    if (result != ncclSuccess) {
      log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ncclCommAbort failed: ", ncclGetErrorString(result));
    }
  }

  // The communicator, then the CUDA objects its views used. Never throws: it runs in destructors.
  void close() noexcept {
    close_comm();
    release_cuda();
  }

  // After the communicator is finalized or aborted, so none of its kernels still reads the barrier's int.
  // cudaFree may wait for work still running on the device (the caller's included) before freeing.
  void release_cuda() noexcept {
    if (flag_ == nullptr && start_ == nullptr) return;
    try {
      const DeviceScope<Api> on_device(device_, name(), "~Comm");
      const RelaxedCapture<Api> relaxed;
      if (flag_ != nullptr) warn_on(Api::free(std::exchange(flag_, nullptr)), "cudaFree");
      if (start_ != nullptr) warn_on(Api::event_destroy(std::exchange(start_, nullptr)), "cudaEventDestroy");
      if (done_ != nullptr) warn_on(Api::event_destroy(std::exchange(done_, nullptr)), "cudaEventDestroy");
    } catch (const std::exception& error) {
      try {
        log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ", error.what());
      } catch (...) {
      }
    }
  }

  void warn_on(cudaError_t status, const char* function) const {
    if (status != cudaSuccess) {
      log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ", function, " failed: ", cudaGetErrorString(status));
    }
  }

  // ncclCommFinalize (bounded), then ncclCommDestroy; a communicator that cannot be finalized is aborted,
  // which frees it too.
  void close_comm() noexcept {
    if (comm_ == nullptr || aborted_) return;
    try {
      if (pending_) {
        abort_now();  // never finished initialising (its group was abandoned)
        return;
      }
      const ncclResult_t result = Api::comm_finalize(comm_);
      if (result == ncclSuccess || result == ncclInProgress) {
        settle("~Comm", "ncclCommFinalize");
      } else {
        log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ncclCommFinalize failed (", ncclGetErrorString(result),
            "); aborting the communicator instead");
        abort_now();
      }
      if (!aborted_) {
        const ncclResult_t destroyed = Api::comm_destroy(comm_);
        if (destroyed != ncclSuccess) {
          log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ncclCommDestroy failed: ", ncclGetErrorString(destroyed));
        }
      }
    } catch (const std::exception& error) {
      abort_now();
      try {
        log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ", error.what());
      } catch (...) {
      }
    }
  }

  ncclComm_t comm_ = nullptr;
  int rank_ = -1;
  int team_rank_ = -1;
  int size_ = 0;
  int device_ = -1;
  int version_ = 0;
  bool pending_ = true;  // until settle() has asked NCCL for rank, size and device
  bool aborted_ = false;
  ErrorCode abort_code_ = ErrorCode::invalid_argument;
  std::string abort_reason_;
  std::uint64_t calls_ = 0;
  const char* last_call_ = "";

  // wait()'s marks (begin_work, end_work): `start` before the oldest call not known to be finished,
  // `done` after the latest; each names its chorus call and number for the messages.
  cudaEvent_t start_ = nullptr;
  cudaEvent_t done_ = nullptr;
  bool started_ = false;   // start_ recorded
  bool recorded_ = false;  // done_ recorded
  cudaStream_t start_stream_ = nullptr;
  cudaStream_t done_stream_ = nullptr;
  const char* start_call_ = "";
  const char* done_call_ = "";
  std::uint64_t start_number_ = 0;
  std::uint64_t done_number_ = 0;
  bool done_deferred_ = false;  // inside an open group: recorded at its end
  cudaStream_t deferred_stream_ = nullptr;
  const char* deferred_call_ = "";
  std::uint64_t deferred_number_ = 0;
  void* flag_ = nullptr;  // the barrier's int
};

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl::detail
