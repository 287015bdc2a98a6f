// An ASCII picture of a simulated pipeline (pipeline_simulator.hpp): one row per rank, one cell per
// `time_per_cell` of time. An action prints its name in its first cell ("F3": forward of
// microbatch 3) and "=" in the cells it still occupies; blank cells are the bubble. With two
// chunks, chunk 1 prints in lower case ("f3"); with more, the chunk number leads ("2F3").
//
//   rank 0 |F0F1F2F3      B0F4  B1F5  B2F6  B3F7  B4    B5    B6    B7|
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "pipeline_schedule.hpp"
#include "pipeline_simulator.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

inline std::string timeline_label(const PipelineAction& a, int chunks) {
  std::string label = op_letter(a.op);
  if (chunks == 2 && a.chunk == 1) label[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(label[0])));
  if (chunks > 2) label = std::to_string(a.chunk) + label;
  return label + std::to_string(a.microbatch);
}

inline std::string format_pipeline_timeline(const PipelineTimeline& t, int chunks = 1, double time_per_cell = 1) {
  if (!(time_per_cell > 0)) {
    throw detail::pipeline_error("format_pipeline_timeline", "time_per_cell = ", time_per_cell, ", must be > 0");
  }
  auto cell = [&](double time) { return static_cast<std::size_t>(std::llround(time / time_per_cell)); };
  std::size_t width = 2;
  for (const auto& row : t.ranks) {
    for (const TimedAction& ta : row) width = std::max(width, timeline_label(ta.action, chunks).size());
  }
  const std::size_t cells = cell(t.makespan);
  const std::string rank_label = "rank " + std::to_string(t.ranks.size() - 1);
  std::string text;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    std::string name = "rank " + std::to_string(r);
    name.resize(rank_label.size(), ' ');
    std::string row(cells * width, ' ');
    for (const TimedAction& ta : t.ranks[r]) {
      const std::size_t first = cell(ta.start), end = std::max(cell(ta.end), first + 1);
      for (std::size_t c = first; c < end && c < cells; ++c) {
        std::string piece = c == first ? timeline_label(ta.action, chunks) : std::string(width, '=');
        piece.resize(width, ' ');
        row.replace(c * width, width, piece);
      }
    }
    text += name + " |" + row + "|\n";
  }
  return text;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
