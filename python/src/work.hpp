// The Work torch hands back for every call: completed (or failed) by the backend's worker thread, with
// the future DDP's reducer and torch.futures need. A failure is a c10::DistBackendError carrying
// chorus's message, so Python sees torch.distributed.DistBackendError.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace chorus_torch {

// An exception_ptr holding DistBackendError(message), for futures and for rethrowing.
inline std::exception_ptr backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

class Work final : public c10d::Work {
 public:
  Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs)
      : c10d::Work(rank, type, title),
        rank_of_call_(rank),
        title_(title),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<at::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  // Called once, by whoever ran the call: marks the future and wakes waiters.
  void complete(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      error_ = error;
    }
    done_signal_.notify_all();
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  }

  bool isCompleted() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  bool isSuccess() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_ && !error_;
  }
  std::exception_ptr exception() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  void synchronize() override {}

  // Blocks until the call has run (chorus bounds every call by its timeout, so an unbounded wait
  // still ends); a shorter `timeout` throws DistBackendError when it passes first. Throws the call's
  // error.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (timeout == kNoTimeout) {
      done_signal_.wait(lock, [&] { return done_; });
    } else if (!done_signal_.wait_for(lock, timeout, [&] { return done_; })) {
      std::rethrow_exception(backend_error(std::string(title_) + " on rank " + std::to_string(rank_of_call_) +
                                           ": Work::wait timed out after " + std::to_string(timeout.count()) +
                                           " ms; the call is still running and ends within its own timeout"));
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  int rank_of_call_;
  const char* title_;  // "chorus:<call>", a string literal
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<at::ivalue::Future> future_;
  mutable std::mutex mutex_;
  std::condition_variable done_signal_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace chorus_torch
