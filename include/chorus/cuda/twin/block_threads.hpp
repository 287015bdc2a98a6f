// One CPU-twin "launch": a rank's blocks x lanes threads running a kernel body, what a kernel launch of
// `view.blocks` blocks is on the GPU. twin::Team starts every rank's blocks this way at once (virtual ranks
// in one launch); a twin IPC rank (ipc_twin.hpp) starts only its own, as a process launches its own kernel.
//
//   BlockThreads launch;
//   launch.start(view, call, algorithm, lanes, deadline);   // may be called for several ranks
//   launch.join();                                           // waits for all; rethrows a lane's exception
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "../kernel/collective.hpp"
#include "host_block.hpp"

namespace chorus::cuda::twin {

class BlockThreads {
 public:
  BlockThreads() = default;
  BlockThreads(const BlockThreads&) = delete;
  BlockThreads& operator=(const BlockThreads&) = delete;
  ~BlockThreads() { join_all(); }

  template <class T>
  void start(const kernel::RankView& view, const kernel::CollectiveCall<T>& call, kernel::KernelAlgorithm algorithm,
             int lanes, std::chrono::steady_clock::time_point deadline) {
    start_body(view, lanes, deadline,
               [call, algorithm](const HostBlock& block, const kernel::RankView& own) { kernel::collective(block, own, call, algorithm); });
  }

  // Any kernel body: body(block, view) on every lane of every block of `view`'s rank.
  template <class Body>
  void start_body(const kernel::RankView& view, int lanes, std::chrono::steady_clock::time_point deadline, Body body) {
    views_.push_back(std::make_unique<kernel::RankView>(view));  // the lanes read it after the caller's copy is gone
    const kernel::RankView* own = views_.back().get();
    for (int b = 0; b < view.blocks; ++b) {
      groups_.push_back(std::make_unique<LaneGroup>(lanes));
      LaneGroup* group = groups_.back().get();
      for (int lane = 0; lane < lanes; ++lane) {
        threads_.emplace_back([this, own, group, b, lane, lanes, body, deadline] {
          try {
            body(HostBlock(lane, lanes, b, *group, deadline), *own);
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

}  // namespace chorus::cuda::twin
