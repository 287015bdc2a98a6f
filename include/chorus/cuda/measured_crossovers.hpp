// Measured crossovers: from a size sweep's median times, where Algorithm::automatic should switch
// kernels, in KernelCrossovers' terms, and the line a user pastes into TeamOptions (chorus-cuda-bench
// prints both). Plain C++, tested on synthetic tables (tests/cuda_twin/test_kernel_choice.cpp).
//
// The rule (docs/cuda/choosing-a-kernel.md), for the kernels automatic climbs through (all_reduce: LL,
// one-shot, two-shot, ring; all_gather and reduce_scatter: one-shot, ring):
//   1. At each size the fastest of those kernels wins. Times within `tie` (relative) of the fastest are a
//      tie, won by the kernel earliest in the climb: a tie never moves a switch to a kernel built for
//      larger messages, and noise in the last digit does not flip a row.
//   2. Each kernel but the last serves up to the largest size at which it won (0 if it never won).
//   3. Made monotone: each threshold is at least the one before, so a win of an earlier kernel past a
//      later kernel's last win takes that range over (non-monotone noise moves a switch up, never makes
//      the thresholds cross, which check_crossovers would refuse).
// Kernels automatic never picks (tree; broadcast's, reduce's and all_to_all's alternatives) are timed
// and printed but fit nothing. If the last kernel (the ring) never won, the switch to it lies beyond the
// sweep: the fitted threshold is the largest size measured, a lower bound, and a note says so.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/all_reduce_call.hpp"
#include "kernel_choice.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// One median: kernel `kernel` took `seconds` on a call whose kernel_for bytes were `bytes`.
struct KernelTiming {
  std::size_t bytes = 0;
  kernel::KernelAlgorithm kernel = kernel::KernelAlgorithm::one_shot;
  double seconds = 0.0;
};

// A KernelCrossovers field set from a measurement.
struct FittedField {
  std::string name;   // as in KernelCrossovers: "ll_max", ...
  std::size_t value;  // bytes
};

struct CrossoverFit {
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  std::vector<std::pair<kernel::KernelAlgorithm, std::size_t>> winners;  // per size, ascending: the winning kernel
  std::vector<FittedField> fields;                                         // what the sweep measured
  std::vector<std::string> notes;                                          // lower bounds, fields left alone
};

// The kernels automatic climbs through for `collective`, in order; empty where it always runs one.
inline std::vector<kernel::KernelAlgorithm> automatic_climb(Collective collective) {
  using K = kernel::KernelAlgorithm;
  if (collective == Collective::all_reduce) return {K::ll_one_shot, K::one_shot, K::two_shot, K::ring};
  if (collective == Collective::all_gather || collective == Collective::reduce_scatter) return {K::one_shot, K::ring};
  return {};
}

// The KernelCrossovers fields a fit of `collective` on `ranks` sets, one per switch of the climb.
inline std::vector<std::string> crossover_fields(Collective collective, int ranks, const KernelCrossovers& base) {
  if (collective == Collective::all_reduce) {
    return {"ll_max", ranks <= base.small_team_ranks ? "one_shot_max_small_team" : "one_shot_max", "two_shot_max"};
  }
  if (collective == Collective::all_gather || collective == Collective::reduce_scatter) return {"gather_one_shot_max"};
  return {};
}

inline std::size_t* crossover_field(KernelCrossovers& c, const std::string& name) {
  if (name == "ll_max") return &c.ll_max;
  if (name == "one_shot_max_small_team") return &c.one_shot_max_small_team;
  if (name == "one_shot_max") return &c.one_shot_max;
  if (name == "two_shot_max") return &c.two_shot_max;
  if (name == "gather_one_shot_max") return &c.gather_one_shot_max;
  throw Error(ErrorCode::invalid_argument, "chorus::cuda::crossover_field: no KernelCrossovers field " + name);
}

// Fits the switches of `collective`'s climb to `timings` (any order; kernels outside the climb ignored).
// `tie`: the relative difference under which two medians are a tie (0.02: 2%).
inline CrossoverFit fit_crossovers(Collective collective, int ranks, const std::vector<KernelTiming>& timings,
                                   const KernelCrossovers& base = {}, double tie = 0.02) {
  if (!(tie >= 0.0)) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::cuda::fit_crossovers: tie must be >= 0, got ", tie));
  }
  CrossoverFit fit;
  fit.collective = collective;
  fit.ranks = ranks;
  const std::vector<kernel::KernelAlgorithm> climb = automatic_climb(collective);
  if (climb.empty()) return fit;
  const auto step_of = [&](kernel::KernelAlgorithm k) {
    return static_cast<std::size_t>(std::find(climb.begin(), climb.end(), k) - climb.begin());
  };
  std::map<std::size_t, std::vector<const KernelTiming*>> by_size;
  for (const KernelTiming& t : timings) {
    if (step_of(t.kernel) < climb.size()) by_size[t.bytes].push_back(&t);
  }
  std::vector<std::optional<std::size_t>> last_win(climb.size());
  for (const auto& size : by_size) {
    double best = size.second.front()->seconds;
    for (const KernelTiming* t : size.second) best = std::min(best, t->seconds);
    std::size_t winner = climb.size();
    for (const KernelTiming* t : size.second) {
      if (t->seconds <= best * (1.0 + tie)) winner = std::min(winner, step_of(t->kernel));
    }
    fit.winners.emplace_back(climb[winner], size.first);
    last_win[winner] = size.first;
  }
  if (by_size.empty()) return fit;
  const std::vector<std::string> names = crossover_fields(collective, ranks, base);
  std::size_t threshold = 0;
  for (std::size_t step = 0; step + 1 < climb.size(); ++step) {
    threshold = std::max(threshold, last_win[step].value_or(0));
    fit.fields.push_back({names[step], threshold});
  }
  if (!last_win.back()) {
    fit.notes.push_back(chorus::detail::concat(kernel::to_string(climb.back()), " never won up to ", by_size.rbegin()->first,
                                               " B: ", names.back(), " is at least that (the switch lies beyond the sweep)"));
  }
  return fit;
}

// `base` with the fits' fields applied, in order. all_gather's and reduce_scatter's fits both measure
// gather_one_shot_max: the smaller is kept (the ring sooner; one switch serves both). An unmeasured field
// that the measured ones would leave out of order is moved to the nearest value check_crossovers
// accepts, and named in `notes`.
inline KernelCrossovers apply_fits(const KernelCrossovers& base, const std::vector<CrossoverFit>& fits,
                                   std::vector<std::string>* notes = nullptr) {
  KernelCrossovers c = base;
  std::vector<std::string> measured;
  for (const CrossoverFit& fit : fits) {
    for (const FittedField& field : fit.fields) {
      std::size_t* target = crossover_field(c, field.name);
      const bool again = std::find(measured.begin(), measured.end(), field.name) != measured.end();
      *target = again ? std::min(*target, field.value) : field.value;
      if (!again) measured.push_back(field.name);
    }
  }
  const auto is_measured = [&](const char* name) { return std::find(measured.begin(), measured.end(), name) != measured.end(); };
  const auto adjust = [&](const char* name, std::size_t& value, std::size_t low, std::size_t high) {
    const std::size_t fixed = std::min(std::max(value, low), std::max(low, high));
    if (fixed == value || is_measured(name)) return;
    if (notes) notes->push_back(chorus::detail::concat(name, " moved from ", value, " to ", fixed, " to stay in order with the measured ones"));
    value = fixed;
  };
  adjust("ll_max", c.ll_max, 0, std::min(c.one_shot_max_small_team, c.one_shot_max));
  adjust("one_shot_max_small_team", c.one_shot_max_small_team, c.ll_max, c.two_shot_max);
  adjust("one_shot_max", c.one_shot_max, c.ll_max, c.two_shot_max);
  adjust("two_shot_max", c.two_shot_max, std::max(c.one_shot_max_small_team, c.one_shot_max), static_cast<std::size_t>(-1));
  return c;
}

// The statement to paste: every field of `c` that differs from `base`, e.g.
// "options.crossovers.ll_max = 32768; options.crossovers.two_shot_max = 4194304;" ("" when none).
inline std::string paste_line(const KernelCrossovers& c, const KernelCrossovers& base = {}) {
  std::string line;
  KernelCrossovers copy = c, from = base;
  for (const char* name : {"ll_max", "one_shot_max_small_team", "one_shot_max", "two_shot_max", "gather_one_shot_max"}) {
    const std::size_t value = *crossover_field(copy, name);
    if (value == *crossover_field(from, name)) continue;
    line += chorus::detail::concat(line.empty() ? "" : " ", "options.crossovers.", name, " = ", value, ";");
  }
  return line;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
