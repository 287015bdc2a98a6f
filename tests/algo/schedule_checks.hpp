// Small helpers the generator tests share: counting steps and asserting a schedule verifies.
#pragma once

#include <chorus/algo/printer.hpp>
#include <chorus/algo/schedule.hpp>
#include <chorus/algo/verifier.hpp>
#include <chorus/core/config.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

CHORUS_NAMESPACE_BEGIN namespace algo::testing {

inline int count_ops(const std::vector<Step>& steps, Op op) {
  int count = 0;
  for (const Step& step : steps) count += step.op == op ? 1 : 0;
  return count;
}

inline int count_recvs(const std::vector<Step>& steps) {
  return count_ops(steps, Op::recv_copy) + count_ops(steps, Op::recv_reduce);
}

// Checks the verifier proves the schedule, printing the schedule's summary and problem if not.
inline void check_verified(const Schedule& schedule) {
  const Verdict verdict = verify(schedule);
  INFO(summary(schedule));
  INFO(verdict.problem);
  CHECK(verdict.ok);
}

// Sum of the counts of every send in the schedule: the traffic the pattern puts on the links.
inline std::size_t elements_sent(const Schedule& schedule) {
  std::size_t total = 0;
  for (const auto& steps : schedule.steps) {
    for (const Step& step : steps) total += step.op == Op::send ? step.count : 0;
  }
  return total;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::testing
