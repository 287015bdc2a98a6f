// Prices a schedule by replaying it: every rank walks its own step list on its own clock, and
// each message is charged on the fabric's route between the two ranks.
//
//   send         posts the range at the sender's current time and does not wait (as in algo/)
//   recv         starts when the receiver has reached it, the matching send is posted, and every
//                resource of the route is free; it holds those resources for bytes / GBps and
//                completes latency_us later; the receiver waits for it
//   copy/reduce  bytes / local_GBps on the rank's own clock
//
// The call takes the latest rank's finish plus the fabric's base latency. Ready messages are
// started in order of the time they could start, so a link is given to whichever message
// reaches it first, which keeps the replay causal and deterministic. This is the alpha-beta
// model applied step by step: a schedule of k sequential steps of m bytes on one link costs
// k * (alpha + m / beta), and pipelining, link sharing and idle ranks come from the schedule
// itself rather than from a closed formula per algorithm (docs/cost-model.md lists the closed
// forms it reproduces).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "fabric.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

// Microseconds for one call of `schedule` with elements of `element_size` bytes on `fabric`.
inline double simulate_us(const algo::Schedule& schedule, const Fabric& fabric, std::size_t element_size) {
  using algo::Op;
  const int n = schedule.ranks;
  if (n != fabric.ranks) {
    throw detail::model_error("simulate_us", "schedule for ", n, " ranks on a fabric of ", fabric.ranks, " ranks");
  }
  if (element_size == 0) throw detail::model_error("simulate_us", "element size must be positive");
  if (schedule.steps.size() != static_cast<std::size_t>(n)) {
    throw detail::model_error("simulate_us", "schedule has ", schedule.steps.size(), " step lists for ", n, " ranks");
  }
  const auto us_for = [&](std::size_t count, double GBps) {
    return GBps > 0.0 ? static_cast<double>(count * element_size) / (GBps * 1.0e3) : 0.0;
  };
  std::vector<double> clock(static_cast<std::size_t>(n), 0.0);
  std::vector<std::size_t> next(static_cast<std::size_t>(n), 0);
  std::vector<std::vector<double>> posted(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) posted[r].assign(schedule.steps[r].size(), -1.0);
  std::vector<double> busy_until(static_cast<std::size_t>(fabric.resource_count), 0.0);
  std::vector<bool> queued(static_cast<std::size_t>(n), false);
  using Ready = std::pair<double, int>;  // (earliest start, rank)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;

  const auto enqueue_if_ready = [&](int r) {
    const auto& steps = schedule.steps[r];
    if (queued[r] || next[r] >= steps.size()) return;
    const algo::Step& step = steps[next[r]];
    if (!algo::is_recv(step.op)) return;
    const double sent = posted[step.peer][step.match];
    if (sent < 0.0) return;
    queued[r] = true;
    ready.push({std::max(clock[r], sent), r});
  };
  // Runs rank r's sends and local steps up to its next receive.
  const auto advance = [&](int r) {
    const auto& steps = schedule.steps[r];
    while (next[r] < steps.size()) {
      const algo::Step& step = steps[next[r]];
      if (algo::is_recv(step.op)) break;
      if (step.op == Op::send) {
        posted[r][next[r]] = clock[r];
        ++next[r];
        enqueue_if_ready(step.peer);
      } else {
        clock[r] += us_for(step.count, fabric.local_GBps);
        ++next[r];
      }
    }
    enqueue_if_ready(r);
  };

  for (int r = 0; r < n; ++r) advance(r);
  while (!ready.empty()) {
    const auto [earliest, r] = ready.top();
    ready.pop();
    queued[r] = false;
    const algo::Step& step = schedule.steps[r][next[r]];
    const Route& route = fabric.route(step.peer, r);
    double start = earliest;
    for (int resource : route.resources) start = std::max(start, busy_until[resource]);
    const double moved = start + us_for(step.count, route.GBps);
    for (int resource : route.resources) busy_until[resource] = moved;
    clock[r] = moved + route.latency_us;
    ++next[r];
    advance(r);
  }
  double finish = 0.0;
  for (int r = 0; r < n; ++r) {
    if (next[r] != schedule.steps[r].size()) {
      throw Error(ErrorCode::internal, chorus::detail::concat("chorus::model::simulate_us: rank ", r, " stuck at step ",
                                                              next[r], " of ", schedule.steps[r].size(),
                                                              " (a receive whose send never comes)"));
    }
    finish = std::max(finish, clock[r]);
  }
  return finish + fabric.base_latency_us;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
