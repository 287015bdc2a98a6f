// verifier.hpp's bodies: compiled in each translation unit header-only, once in libchorus in compiled mode
// (core/config.hpp). Included by verifier.hpp; not for direct use. The work is in verifier/: the expressions
// (expressions.hpp), the shape and step checks (step_checks.hpp), the simulation (simulation.hpp).
#pragma once

#include <cstddef>
#include <exception>
#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "schedule.hpp"
#include "verifier.hpp"
#include "verifier/simulation.hpp"
#include "verifier/step_checks.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {
namespace verify_detail {

inline std::string verify_or_explain(const Schedule& schedule, std::size_t& elements_sent) {
  std::string problem = check_shape(schedule);
  if (!problem.empty()) return problem;
  for (const auto& steps : schedule.steps) {
    for (const Step& step : steps) {
      if (step.op == Op::send) elements_sent += step.count;
    }
  }
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const Layout layout = layout_of(schedule, rank);
    for (std::size_t index = 0; index < schedule.steps[rank].size(); ++index) {
      if (!(problem = check_step(schedule, rank, index, layout)).empty()) return problem;
    }
  }
  // Pair messages on a copy: a failure means they do not line up; a difference means the
  // schedule was never linked, and an executor would pair them wrongly.
  Schedule linked = schedule;
  try {
    link(linked);
  } catch (const Error& error) {
    return concat("messages do not pair up: ", error.what());
  }
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    for (std::size_t index = 0; index < schedule.steps[rank].size(); ++index) {
      const std::uint32_t expected = linked.steps[rank][index].match;
      if (schedule.steps[rank][index].match != expected) {
        return concat(where(schedule, rank, index), ": match is ", schedule.steps[rank][index].match,
                      " but link() gives ", expected, " (was link() called?)");
      }
    }
  }
  Simulation simulation(schedule);
  if (!(problem = simulation.run()).empty()) return problem;
  return simulation.check_result();
}

}  // namespace verify_detail

CHORUS_FUNC Verdict verify(const Schedule& schedule) {
  Verdict verdict;
  try {
    verdict.problem = verify_detail::verify_or_explain(schedule, verdict.elements_sent);
  } catch (const std::exception& error) {
    verdict.problem = chorus::detail::concat("the verifier could not finish: ", error.what());
  }
  verdict.ok = verdict.problem.empty();
  return verdict;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
