// Holding a CPU twin stream (cuda/device/twin_stream.hpp) busy, as a kernel that is still computing would:
// work enqueued behind a Gate has not run until release(). The tests use it to show that a call only
// enqueues, and that what must wait does wait (on events, not on the host).
#pragma once

#include <chorus/cuda/device/twin_stream.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace support {

class Gate {
 public:
  // Bounded: a test that forgets to release still ends (after 60 s) instead of hanging.
  explicit Gate(chorus::cuda::twin::Stream& stream) {
    stream.enqueue([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      open_.wait_for(lock, std::chrono::seconds(60), [&] { return released_; });
    });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    open_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable open_;
  bool released_ = false;
};

// Whether `stream` ran everything enqueued so far within `bound` (cudaStreamSynchronize, bounded).
inline bool drained(chorus::cuda::twin::Stream& stream, std::chrono::seconds bound = std::chrono::seconds(30)) {
  chorus::cuda::twin::Event done;
  stream.record(done);
  return done.wait_reached(done.last_mark(), std::chrono::steady_clock::now() + bound);
}

}  // namespace support
