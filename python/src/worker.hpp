// The thread that runs a process group's calls, one at a time, in the order they were issued (as
// gloo's work queue does): torch requires every rank to issue a group's calls in the same order, and
// chorus matches them in that order. asyncOp=false runs the call in the caller's thread once every
// earlier call has run, so the order still holds.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace chorus_torch {

class Worker {
 public:
  using Job = std::function<void()>;  // runs the call and completes its Work; never throws

  Worker() : thread_([this] { loop(); }) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() { stop(); }

  void post(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(job));
    }
    changed_.notify_all();
  }

  // Runs `job` here after every posted job has run.
  void run_here(const Job& job) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
      busy_ = true;
    }
    job();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }

  // Runs what is queued, then ends the thread. Idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return (!queue_.empty() && !busy_) || (stopping_ && queue_.empty() && !busy_); });
      if (queue_.empty()) return;
      Job job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      job();
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace chorus_torch
