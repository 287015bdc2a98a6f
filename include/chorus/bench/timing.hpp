// Per-rank timing of a collective the way nccl-tests times it: warm-up calls, a barrier, then
// `iters` back-to-back calls on a steady clock. The caller combines ranks (chorus-bench takes the
// slowest: a collective is done only when its last rank is).
#pragma once

#include <chrono>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

// Runs call() `warmup` times untimed, then `iters` times timed between barriers; returns this
// rank's seconds per call. Warm-up pays for first-touch page faults and waking idle threads,
// which would otherwise land in the first timed calls.
template <class Comm, class Fn>
double seconds_per_call(Comm& comm, int warmup, int iters, Fn&& call) {
  if (warmup < 0 || iters < 1) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::bench::seconds_per_call: need warmup >= 0 and iters >= 1, got warmup ",
                                       warmup, " and iters ", iters));
  }
  for (int i = 0; i < warmup; ++i) call();
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) call();
  const auto stop = std::chrono::steady_clock::now();
  comm.barrier();  // outside the timed region: only lines ranks up for whatever comes next
  return std::chrono::duration<double>(stop - start).count() / iters;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
