// Renders schedules as text for people: one line per step, or a whole schedule as a table.
// Output is stable (tests and docs compare it verbatim), so change the format deliberately.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// "out[8,10)": a buffer range as a half-open interval of elements.
inline std::string range_text(Span span, std::size_t count) {
  return chorus::detail::concat(to_string(span.buffer), "[", span.offset, ",", span.offset + count, ")");
}

// One step as "sources -> destination", e.g. "recv+reduce in[0,2) + rank 1 -> out[0,2)".
CHORUS_FUNC std::string describe(const Step& step);

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC std::string describe(const Step& step) {
  const std::string src = range_text(step.src, step.count);
  const std::string dst = range_text(step.dst, step.count);
  const std::string peer = chorus::detail::concat("rank ", step.peer);
  switch (step.op) {
    case Op::send: return chorus::detail::concat("send ", src, " -> ", peer);
    case Op::recv_copy: return chorus::detail::concat("recv ", peer, " -> ", dst);
    case Op::recv_reduce: return chorus::detail::concat("recv+reduce ", src, " + ", peer, " -> ", dst);
    case Op::copy: return chorus::detail::concat("copy ", src, " -> ", dst);
    case Op::reduce: return chorus::detail::concat("reduce ", dst, " + ", src, " -> ", dst);
  }
  return chorus::detail::concat("invalid op ", static_cast<int>(step.op));
}
#endif

// "all_reduce ring, 4 ranks, count 8[, root 0][, in place][, scratch 2]".
CHORUS_FUNC std::string summary(const Schedule& schedule);

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC std::string summary(const Schedule& schedule) {
  std::string line = chorus::detail::concat(to_string(schedule.collective), " ", to_string(schedule.pattern), ", ",
                                    schedule.ranks, schedule.ranks == 1 ? " rank" : " ranks", ", count ",
                                    schedule.count);
  if (traits(schedule.collective).rooted) {
    line += chorus::detail::concat(", root ", schedule.root);
  }
  if (schedule.in_place) line += ", in place";
  if (schedule.scratch_count != 0) line += chorus::detail::concat(", scratch ", schedule.scratch_count);
  return line;
}
#endif

// The summary line, then one row per step (rank by rank, in execution order) with the columns
// rank, step, op, peer, src, dst, count. Ranges a step does not use print as "-".
CHORUS_FUNC std::string to_table(const Schedule& schedule);

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC std::string to_table(const Schedule& schedule) {
  constexpr std::size_t kColumns = 7;
  using Row = std::array<std::string, kColumns>;
  // Numbers read best right-aligned, words and ranges left-aligned.
  constexpr std::array<bool, kColumns> kRight = {true, true, false, true, false, false, true};
  std::vector<Row> rows;
  rows.push_back(Row{"rank", "step", "op", "peer", "src", "dst", "count"});
  for (std::size_t rank = 0; rank < schedule.steps.size(); ++rank) {
    const auto& steps = schedule.steps[rank];
    for (std::size_t index = 0; index < steps.size(); ++index) {
      const Step& step = steps[index];
      const bool remote = step.op == Op::send || is_recv(step.op);
      const bool reads = step.op != Op::recv_copy;
      rows.push_back(Row{std::to_string(rank), std::to_string(index), to_string(step.op),
                         remote ? std::to_string(step.peer) : "-",
                         reads ? range_text(step.src, step.count) : "-",
                         writes(step.op) ? range_text(step.dst, step.count) : "-", std::to_string(step.count)});
    }
  }
  std::array<std::size_t, kColumns> width{};
  for (const Row& row : rows) {
    for (std::size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string text = summary(schedule) + "\n";
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < kColumns; ++c) {
      if (c != 0) line += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      line += kRight[c] ? pad + row[c] : row[c] + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    text += line + "\n";
  }
  return text;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
