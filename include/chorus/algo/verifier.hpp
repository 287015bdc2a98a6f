// The symbolic verifier: runs a schedule on expressions instead of numbers and proves that every
// output element ends up holding exactly what the collective promises. Each input element is a
// leaf (rank, index); a reduction builds combine(left, right). Expressions are hash-consed, so two
// ranks hold the same id exactly when they computed the same value in the same order: that is
// the bit-identical-results rule for all_reduce.
//
// The simulation follows the executor's rules (see schedule.hpp and the backends): a send only
// publishes; a recv waits for its matching send and reads the sender's memory when it runs
// (zero-copy); a step that writes memory overlapping one of its own unacknowledged sends waits
// until the receiver has read it. Input and output share one address space per rank, laid out
// as the in-place aliasing says, so aliasing hazards are real. A schedule that cannot finish is
// reported as a deadlock naming every stuck rank and what it waits for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "printer.hpp"
#include "../core/config.hpp"
#include "schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

struct Verdict {
  bool ok = true;
  std::string problem;             // empty when ok; otherwise names rank, step and element
  std::size_t elements_sent = 0;   // sum of count over all send steps, for cost checks
};

// Proves the schedule correct for its collective, or explains the first problem found. Never
// throws for a malformed schedule: every defect becomes Verdict::problem.
CHORUS_FUNC Verdict verify(const Schedule& schedule);

}  CHORUS_NAMESPACE_END  // namespace chorus::algo

#if CHORUS_DEFINE_BODIES
#include "verifier_inl.hpp"
#endif
