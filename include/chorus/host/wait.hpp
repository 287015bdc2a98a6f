// Bounded waiting for another rank's thread: spin a little (the answer is often a few hundred
// nanoseconds away), then yield (other rank threads may need this core: tests run 16 ranks on
// 2 cores), then sleep in growing steps so idle waiters cost almost nothing. Every round calls
// `poll`, which throws to leave early (team aborted, peer mismatched or gone); the deadline
// starts when spinning stops, and running past it calls `on_timeout`, which must throw.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

namespace chorus::host::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Tuned on a 2-core machine running 4-16 rank threads (see docs/benchmarks.md): longer spins
// only steal the core from the thread being waited for.
struct WaitPolicy {
  static constexpr int kSpins = 64;
  static constexpr int kYields = 64;
  static constexpr std::chrono::microseconds kFirstSleep{5};
  static constexpr std::chrono::microseconds kMaxSleep{500};
};

template <class Ready, class Poll, class OnTimeout>
void wait_until(long timeout_ms, Ready&& ready, Poll&& poll, OnTimeout&& on_timeout) {
  if (ready()) return;
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline{};
  std::chrono::microseconds sleep = WaitPolicy::kFirstSleep;
  for (int round = 0;; ++round) {
    poll();
    if (ready()) return;
    if (round < WaitPolicy::kSpins) {
      cpu_relax();
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (round == WaitPolicy::kSpins) {
      deadline = now + std::chrono::milliseconds(timeout_ms);
    } else if (now >= deadline) {
      poll();  // a peer's failure explains this wait better than our timeout does
      if (ready()) return;
      on_timeout();
    }
    if (round < WaitPolicy::kSpins + WaitPolicy::kYields) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, WaitPolicy::kMaxSleep);
    }
  }
}

}  // namespace chorus::host::detail
