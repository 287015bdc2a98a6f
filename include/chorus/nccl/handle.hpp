// One ncclComm_t and what chorus knows about it: its rank, size and device, whether NCCL is still setting
// it up (a nonblocking init or split inside a group finishes at the group's end), whether it was aborted
// and why, and the last call enqueued on it (for timeout messages). Comm and its stream views share it;
// the last owner finalizes and destroys it.
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

#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../cuda/runtime_check.hpp"
#include "check.hpp"
#include "progress.hpp"

namespace chorus::nccl::detail {

inline ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Makes `device` current for a scope (and restores the caller's): the CUDA calls a view makes itself
// (scratch for barrier and in-place all_to_all) must go to its communicator's GPU, while one thread may
// be driving several.
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

  // Until `stream` has run everything enqueued on it, watching for asynchronous NCCL errors.
  void wait(cudaStream_t stream, const char* call) {
    ensure_usable(call);
    struct Probe {
      Handle& self;
      cudaStream_t stream;
      const char* call;
      bool stream_done() {
        const cudaError_t status = Api::stream_query(stream);
        if (status == cudaErrorNotReady) return false;
        self.check_cuda(status, call, "cudaStreamQuery");
        return true;
      }
      ncclResult_t async_error() {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t result = Api::comm_get_async_error(self.comm_, &state);
        return result != ncclSuccess ? result : state;
      }
      std::string last_error() { return Api::last_error(self.comm_); }
      void abort() { self.abort_now(); }
    } probe{*this, stream, call};
    const std::string what =
        calls_ == 0 ? chorus::detail::concat("stream ", static_cast<const void*>(stream), " to finish")
                    : chorus::detail::concat("stream ", static_cast<const void*>(stream), " to finish ", last_call_, " (call ", calls_,
                                     " on this communicator)");
    guarded(call, [&] { wait_for_nccl(probe, call, name(), what, env::timeout_ms()); });
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

  void abort_now() {
    if (aborted_ || comm_ == nullptr) return;
    aborted_ = true;
    const ncclResult_t result = Api::comm_abort(comm_);
    if (result != ncclSuccess) {
      log(LogLevel::warn, "nccl::Comm on rank ", name(), ": ncclCommAbort failed: ", ncclGetErrorString(result));
    }
  }

  // ncclCommFinalize (bounded), then ncclCommDestroy; a communicator that cannot be finalized is aborted,
  // which frees it too. Never throws: it runs in destructors.
  void close() noexcept {
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
};

}  // namespace chorus::nccl::detail
