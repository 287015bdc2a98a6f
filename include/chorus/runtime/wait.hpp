// Bounded waiting for another rank (a thread of the host backend, a process behind MPI): spin a
// little (the answer is often a few hundred nanoseconds away), then yield (other ranks may need
// this core: tests run 16 ranks on 2 cores), then sleep in growing steps so idle waiters cost almost nothing. Every round calls
// `poll`, which throws to leave early (team aborted, peer mismatched or gone); the deadline
// starts when spinning stops, and running past it calls `on_timeout`, which either throws or
// returns how much longer to wait (a rank may give the one it waits for a chance to report a
// failure further down the chain first).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Tuned on a 2-core machine running 2-16 rank threads: long spins only steal the core from the
// thread being waited for, and many yielding threads starve the one with work, so a team with
// more ranks than cores yields briefly and then sleeps.
struct WaitPolicy {
  static constexpr int kSpins = 16;
  static constexpr int kYieldsAlone = 2000;  // ranks <= hardware threads
  static constexpr int kYieldsCrowded = 48;  // more ranks than hardware threads
  static constexpr std::chrono::microseconds kFirstSleep{5};
  static constexpr std::chrono::microseconds kMaxSleep{250};

  static int yields(int ranks) {
    return static_cast<unsigned>(ranks) <= cores() ? kYieldsAlone : kYieldsCrowded;
  }

  // The longest sleep between polls. Every sleeping rank thread wakes, polls and sleeps again, and
  // each such round costs the cores a few microseconds; with thousands of rank threads on a few
  // cores, 250 us sleeps would spend all the cores on polling and starve the thread that has work
  // (4096 ranks on 2 cores timed out). So the longest sleep grows with threads per core: 25 us per
  // thread on the core, which caps the sleepers' polling at 40,000 rounds per second per core
  // whatever the team size: 250 us up to 10 ranks per core, 51 ms at 2048 per core. A sleeper
  // notices progress that much later, which only teams far beyond the core count ever see.
  static std::chrono::microseconds max_sleep(int ranks) {
    const auto per_core = static_cast<long long>(ranks) / static_cast<long long>(cores());
    return std::chrono::microseconds(std::clamp<long long>(per_core * 25, kMaxSleep.count(), 200000));
  }

  static unsigned cores() {
    static const unsigned count = std::max(1u, std::thread::hardware_concurrency());
    return count;
  }
};

// `yields`: how many rounds to yield before sleeping (WaitPolicy::yields(team size)); `max_sleep`:
// the longest sleep between polls (WaitPolicy::max_sleep(team size)).
template <class Ready, class Poll, class OnTimeout>
void wait_until(long timeout_ms, int yields, Ready&& ready, Poll&& poll, OnTimeout&& on_timeout,
                std::chrono::microseconds max_sleep = WaitPolicy::kMaxSleep) {
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
      deadline = now + std::chrono::milliseconds(on_timeout());
    }
    if (round < WaitPolicy::kSpins + yields) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, max_sleep);
    }
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
