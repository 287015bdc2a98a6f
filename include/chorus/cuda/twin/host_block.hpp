// The CPU twin's Block: the primitives a kernel body uses, on a std::thread per lane. Flags are GCC/Clang
// atomics on the same plain memory the kernels see (acquire loads and release stores where the device
// uses ld.acquire.sys / st.release.sys; LL lines are single 8-byte atomics as on the device), so
// ThreadSanitizer finds any data read that no flag orders after its write.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "../../core/config.hpp"
#include "../kernel/rank_view.hpp"
#include "lane_group.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

class HostBlock {
 public:
  // `aborted`: the rank's Signals::aborted word, which the host sets to release every waiting block.
  HostBlock(int lane, int lanes, int block, LaneGroup& group, std::chrono::steady_clock::time_point deadline,
            const std::uint32_t* aborted)
      : lane_(lane), lanes_(lanes), block_(block), group_(&group), deadline_(deadline), aborted_(aborted) {}

  int lane() const { return lane_; }
  int lanes() const { return lanes_; }
  int block() const { return block_; }

  void sync() const { group_->arrive(false, deadline_); }
  bool sync_or(bool flag) const { return group_->arrive(flag, deadline_); }

  std::uint32_t load_acquire(const std::uint32_t* flag) const { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }
  void store_release(std::uint32_t* flag, std::uint32_t value) const { __atomic_store_n(flag, value, __ATOMIC_RELEASE); }
  std::uint64_t load_line(const std::uint64_t* line) const { return __atomic_load_n(line, __ATOMIC_RELAXED); }
  void store_line(std::uint64_t* line, std::uint64_t value) const { __atomic_store_n(line, value, __ATOMIC_RELAXED); }
  bool claim(std::uint32_t* word) const {
    std::uint32_t expected = 0;
    return __atomic_compare_exchange_n(word, &expected, 1u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  void fence_system() const { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

  // Past the deadline, or aborted by the host: either way the wait gives up.
  bool expired() const { return std::chrono::steady_clock::now() > deadline_ || load_acquire(aborted_) != 0; }
  void backoff() const { std::this_thread::yield(); }

  // Seeded skew before a wait (RankView::delay_seed != 0): a different, reproducible delay per rank,
  // block, lane and step, so a missing barrier shows up as a race or a wrong result rather than hiding
  // behind lucky timing.
  void delay(const kernel::RankView& view, std::uint32_t step) const {
    if (view.delay_seed == 0) return;
    std::uint32_t h = view.delay_seed ^ (static_cast<std::uint32_t>(view.rank) * 0x9e3779b9u) ^
                      (static_cast<std::uint32_t>(block_) << 8) ^ (static_cast<std::uint32_t>(lane_) << 16) ^ (step * 0x85ebca6bu);
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    if (h % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(h % 200));
  }

 private:
  int lane_;
  int lanes_;
  int block_;
  LaneGroup* group_;
  std::chrono::steady_clock::time_point deadline_;
  const std::uint32_t* aborted_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
