// One CPU-twin "launch": a rank's blocks x lanes threads running a kernel body, what a kernel launch of
// `view.blocks` blocks is on the GPU. TwinDevice (cuda/device/twin_device.hpp) runs a launch of several
// virtual ranks as several start_body calls, all joined together, on the stream's worker thread.
//
//   BlockThreads launch;
//   launch.start_body(view, lanes, deadline, body);   // body(block, view) on every lane; may be called per rank
//   launch.join();                                     // waits for all; rethrows a lane's exception
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../kernel/rank_view.hpp"
#include "host_block.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

class BlockThreads {
 public:
  BlockThreads() = default;
  BlockThreads(const BlockThreads&) = delete;
  BlockThreads& operator=(const BlockThreads&) = delete;
  ~BlockThreads() { join_all(); }

  // body(block, view) on every lane of every block of `view`'s rank. Each block polls the rank's
  // Signals::aborted word, as DeviceBlock does.
  template <class Body>
  void start_body(const kernel::RankView& view, int lanes, std::chrono::steady_clock::time_point deadline, Body body) {
    views_.push_back(std::make_unique<kernel::RankView>(view));  // the lanes read it after the caller's copy is gone
    const kernel::RankView* own = views_.back().get();
    const std::uint32_t* aborted = &own->signals[own->rank]->aborted;
    for (int b = 0; b < view.blocks; ++b) {
      groups_.push_back(std::make_unique<LaneGroup>(lanes));
      LaneGroup* group = groups_.back().get();
      for (int lane = 0; lane < lanes; ++lane) {
        threads_.emplace_back([this, own, group, b, lane, lanes, body, deadline, aborted] {
          try {
            body(HostBlock(lane, lanes, b, *group, deadline, aborted), *own);
          } catch (...) {
            std::lock_guard<std::mutex> lock(failure_mutex_);
            if (!failure_) failure_ = std::current_exception();
          }
        });
      }
    }
  }

  // Waits for every lane started so far; rethrows the first exception a lane threw.
  void join() {
    join_all();
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

 private:
  void join_all() noexcept {
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
    threads_.clear();
  }

  std::vector<std::unique_ptr<kernel::RankView>> views_;
  std::vector<std::unique_ptr<LaneGroup>> groups_;
  std::vector<std::thread> threads_;
  std::mutex failure_mutex_;
  std::exception_ptr failure_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
