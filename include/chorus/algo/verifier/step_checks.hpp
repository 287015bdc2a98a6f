// The verifier's checks of a schedule's shape and of each step judged alone (spans inside their buffers,
// peers and ops valid), run before the simulation so it may index freely. Part of the verifier's bodies
// (verifier_inl.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../printer.hpp"
#include "../schedule.hpp"
#include "expressions.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::verify_detail {

// Where input, output and scratch start in a rank's one address space (indexed by Buffer).
struct Layout {
  std::size_t base[3] = {0, 0, 0};
  std::size_t size[3] = {0, 0, 0};
  std::size_t total = 0;
  std::size_t address(Span span) const { return base[static_cast<int>(span.buffer)] + span.offset; }
};

inline Layout layout_of(const Schedule& schedule, int rank) {
  Layout layout;
  const std::size_t in = schedule.input_count();
  const std::size_t out = schedule.output_count();
  const std::size_t own = static_cast<std::size_t>(rank) * schedule.count;
  layout.size[0] = in;
  layout.size[1] = out;
  layout.size[2] = schedule.scratch_count;
  std::size_t end = in + out;
  if (!schedule.in_place) {
    layout.base[1] = in;
  } else if (traits(schedule.collective).in_place == InPlaceLayout::send_inside_recv) {
    layout.base[0] = own;  // input is this rank's slot of the output
    end = out;
  } else if (traits(schedule.collective).in_place == InPlaceLayout::recv_inside_send) {
    layout.base[1] = own;  // output is this rank's slot of the input
    end = in;
  } else {
    end = std::max(in, out);  // the same memory
  }
  layout.base[2] = end;
  layout.total = end + schedule.scratch_count;
  return layout;
}

inline std::string where(const Schedule& schedule, int rank, std::size_t index) {
  return concat("rank ", rank, " step ", index, " (", describe(schedule.steps[rank][index]), ")");
}

inline std::string element_text(Span span, std::size_t k) {
  return concat(to_string(span.buffer), "[", span.offset + k, "]");
}

// Shape of the whole schedule; run first so later checks may index freely.
inline std::string check_shape(const Schedule& schedule) {
  const int n = schedule.ranks;
  if (n < 1 || n > kMaxRanks) return concat("ranks is ", n, "; the verifier handles 1..", kMaxRanks);
  const auto collective = static_cast<unsigned>(schedule.collective);
  if (collective >= static_cast<unsigned>(kCollectiveCount)) return concat("invalid collective ", collective);
  if (schedule.steps.size() != static_cast<std::size_t>(n)) {
    return concat("the schedule has step lists for ", schedule.steps.size(), " ranks but ranks is ", n);
  }
  if (traits(schedule.collective).rooted && (schedule.root < 0 || schedule.root >= n)) {
    return concat("root ", schedule.root, " is not a rank of ", n);
  }
  // Checked piecewise so that no product or sum can overflow before the comparison.
  const std::size_t per_rank_limit = kMaxElements / static_cast<std::size_t>(n);
  if (schedule.count > per_rank_limit || schedule.scratch_count > per_rank_limit ||
      schedule.input_count() + schedule.output_count() + schedule.scratch_count > per_rank_limit) {
    return concat("count ", schedule.count, " and scratch ", schedule.scratch_count, " on ", n,
                  " ranks exceed the verifier's limit of ", kMaxElements, " elements in all");
  }
  return {};
}

// What is wrong with a span a step uses, or "" (messages are built only on failure: this runs
// for every step, so it must stay cheap).
inline std::string span_defect(const char* role, Span span, std::size_t count, const Layout& layout) {
  const auto buffer = static_cast<unsigned>(span.buffer);
  if (buffer > static_cast<unsigned>(Buffer::scratch)) return concat(role, " names invalid buffer ", buffer);
  const std::size_t size = layout.size[buffer];
  if (span.offset > size || count > size - span.offset) {
    return concat(role, " ", range_text(span, count), " lies outside ", to_string(span.buffer), " (", size,
                  " elements)");
  }
  return {};
}

// What is wrong with a step judged alone, or "".
inline std::string step_defect(const Schedule& schedule, int rank, const Step& step, const Layout& layout) {
  if (step.op == Op::send || is_recv(step.op)) {
    if (step.peer < 0 || step.peer >= schedule.ranks) {
      return concat("peer ", step.peer, " is not a rank of ", schedule.ranks);
    }
    if (step.peer == rank) return "a rank cannot message itself";
  }
  const bool reads = step.op != Op::recv_copy;
  const bool writes_dst = writes(step.op);
  std::string defect;
  if (reads && !(defect = span_defect("source", step.src, step.count, layout)).empty()) return defect;
  if (writes_dst && !(defect = span_defect("destination", step.dst, step.count, layout)).empty()) return defect;
  if (writes_dst && step.dst.buffer == Buffer::input) {
    return "writes the input buffer; only output and scratch may be written";
  }
  const bool non_root = rank != schedule.root;
  if (traits(schedule.collective).recv_on_root_only && non_root &&
      ((reads && step.src.buffer == Buffer::output) || (writes_dst && step.dst.buffer == Buffer::output))) {
    return "a non-root rank of reduce touches out, which may be null there (use scratch)";
  }
  if (traits(schedule.collective).send_on_root_only && non_root && reads && step.src.buffer == Buffer::input) {
    return "a non-root rank of broadcast reads in, which may be null there";
  }
  if (reads && writes_dst && step.count > 0) {
    // Element-wise ops are safe when source and destination coincide; a shifted overlap gives
    // results that depend on the order the executor walks the range.
    const std::size_t src = layout.address(step.src);
    const std::size_t dst = layout.address(step.dst);
    if (src != dst && src < dst + step.count && dst < src + step.count) {
      return "source and destination overlap in memory without coinciding";
    }
  }
  return {};
}

inline std::string check_step(const Schedule& schedule, int rank, std::size_t index, const Layout& layout) {
  const Step& step = schedule.steps[rank][index];
  const auto op = static_cast<unsigned>(step.op);
  if (op > static_cast<unsigned>(Op::reduce)) return concat("rank ", rank, " step ", index, " has invalid op ", op);
  const std::string defect = step_defect(schedule, rank, step, layout);
  return defect.empty() ? defect : concat(where(schedule, rank, index), ": ", defect);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::verify_detail
