// The lanes of one CPU-twin block: a reusable barrier that also ORs a flag across the lanes, what
// __syncthreads and __syncthreads_or are to a CUDA block. Mutex-based, so everything a lane wrote before
// it arrives happens before what any lane does after leaving: the guarantee __syncthreads gives, and what
// ThreadSanitizer checks the kernels against.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "../../core/config.hpp"
#include "../../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

class LaneGroup {
 public:
  explicit LaneGroup(int lanes) : lanes_(lanes) {}

  // Blocks until every lane has arrived; returns whether any lane passed true. Lanes of one block always
  // arrive (the kernels' barriers are uniform), so the bound only catches a kernel that is not.
  bool arrive(bool flag, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    any_ = any_ || flag;
    if (++arrived_ == lanes_) {
      result_ = any_;
      any_ = false;
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return result_;
    }
    if (!changed_.wait_until(lock, deadline + std::chrono::seconds(5), [&] { return generation_ != generation; })) {
      throw Error(ErrorCode::internal, "chorus::cuda::twin: a block barrier was not reached by every lane");
    }
    return result_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int lanes_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool any_ = false;
  bool result_ = false;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
