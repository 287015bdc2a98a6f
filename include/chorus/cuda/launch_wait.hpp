// The host's one bounded wait for a device communicator's own work (Team::synchronize, the per-rank
// views' wait(), IpcComm::wait()): it waits on the communicator's order events, which follow only its own
// launches, so unrelated work on the same streams is not waited for; and its bound, the kernels' bound
// (CHORUS_KERNEL_TIMEOUT_MS) plus a grace period, restarts whenever one of the communicator's kernels
// starts (TimeoutRecord::started), so work queued ahead of a kernel does not count against it.
#pragma once

#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../runtime/wait.hpp"
#include "kernel/rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

inline constexpr long kHostGraceMs = 5000;

template <class Device>
struct PendingWork {
  Device device;
  typename Device::Event event;
  int rank;  // the first rank of the launch group, for errors
};

// Waits until every event is reached; `records`: the host-visible records of the ranks whose kernels the
// events follow. Throws chorus::Error(timeout) naming `call` and the rank whose device did not finish.
template <class Device>
void wait_for_work(const std::vector<PendingWork<Device>>& pending, const std::vector<const kernel::TimeoutRecord*>& records,
                   const char* call) {
  const long bound_ms = env::kernel_timeout_ms() + kHostGraceMs;
  const auto started = [&] {
    std::uint64_t sum = 0;
    for (const kernel::TimeoutRecord* record : records) sum += __atomic_load_n(&record->started, __ATOMIC_ACQUIRE);
    return sum;
  };
  std::uint64_t seen = started();
  std::size_t next = 0;  // the first event not yet reached
  const auto ready = [&] {
    while (next < pending.size() && pending[next].device.query(pending[next].event, call, pending[next].rank)) ++next;
    return next == pending.size();
  };
  runtime::wait_until(bound_ms, runtime::WaitPolicy::yields(1), ready, [] {}, [&]() -> long {
    const std::uint64_t now = started();
    if (now != seen) {  // a kernel started since: its own bound starts now
      seen = now;
      return bound_ms;
    }
    const PendingWork<Device>& late = pending[next];
    throw make_error(ErrorCode::timeout, call, late.rank, "device ", late.device.ordinal(), " did not finish this communicator's work within ",
                     bound_ms, " ms of its last kernel start (CHORUS_KERNEL_TIMEOUT_MS + ", kHostGraceMs,
                     " ms); the kernels' own bounded waits should have ended first");
  });
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
