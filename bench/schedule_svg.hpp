// chorus-schedule's pictures: hand-written SVG (no library), small and valid XML.
//   - a collective schedule: ranks as rows, rounds as columns, one arrow per transfer from the
//     sender's row to the receiver's, labelled with the range it lands in;
//   - a pipeline schedule: a Gantt chart of the simulated timeline, one box per action.
// Tool-local (bench/): the chorus headers never write SVG.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <chorus/algo/printer.hpp>
#include <chorus/algo/schedule.hpp>
#include <chorus/parallel/pipeline_schedule.hpp>
#include <chorus/parallel/pipeline_simulator.hpp>
#include <chorus/topo/xml.hpp>

#include "svg_elements.hpp"

namespace schedule_svg {

namespace algo = chorus::algo;
namespace parallel = chorus::parallel;

// The round (picture column) of every step, rank by rank. A schedule is per-rank step lists with
// no global clock, so the picture makes one: a send goes out in its rank's current round without
// waiting; a receive lands in the first round in which its message has been sent and its rank is
// free, and frees the rank one round later; a local copy or reduce takes a round of its own. So
// each rank receives at most once per round and a message forwarded on arrival moves one round on.
inline std::vector<std::vector<int>> step_rounds(const algo::Schedule& schedule) {
  const std::size_t n = schedule.steps.size();
  std::vector<std::vector<int>> round(n);
  std::vector<std::size_t> next(n, 0);
  std::vector<int> clock(n, 0);
  std::size_t remaining = 0;
  for (std::size_t r = 0; r < n; ++r) {
    round[r].assign(schedule.steps[r].size(), -1);
    remaining += schedule.steps[r].size();
  }
  while (remaining > 0) {
    bool progressed = false;
    for (std::size_t r = 0; r < n; ++r) {
      const auto& steps = schedule.steps[r];
      for (; next[r] < steps.size(); ++next[r], --remaining, progressed = true) {
        const algo::Step& step = steps[next[r]];
        int& at = round[r][next[r]];
        if (step.op == algo::Op::send) {
          at = clock[r];
          continue;
        }
        if (algo::is_recv(step.op)) {
          const int sent = round[static_cast<std::size_t>(step.peer)][step.match];
          if (sent < 0) break;  // the sender has not reached it yet
          at = std::max(clock[r], sent);
        } else {
          at = clock[r];
        }
        clock[r] = at + 1;
      }
    }
    if (!progressed) throw chorus::Error(chorus::ErrorCode::internal, "chorus-schedule: the schedule does not progress");
  }
  return round;
}

inline int round_count(const std::vector<std::vector<int>>& rounds) {
  int count = 0;
  for (const auto& list : rounds) {
    for (int at : list) count = std::max(count, at + 1);
  }
  return count;
}

namespace detail {

using svg_elements::num;
using svg_elements::text;
using svg_elements::line;
using svg_elements::rect;
using svg_elements::open_svg;

// Approximate advance of a monospace glyph at font-size 11, for sizing columns to their labels.
constexpr double kGlyph = 6.7;

}  // namespace detail

// Ranks as rows, rounds as columns; an arrow per transfer, slanting from the sender's row at the
// column's left to the receiver's row at its right, so crossing transfers (an exchange, the
// ring's wrap-around) stay apart. Blue arrows copy, red ones reduce; grey boxes are local steps.
inline std::string collective_svg(const algo::Schedule& schedule) {
  using detail::num;
  const auto rounds = step_rounds(schedule);
  const int columns = std::max(round_count(rounds), 1);
  const int n = schedule.ranks;
  std::size_t longest = 8;
  for (const auto& steps : schedule.steps) {
    for (const algo::Step& step : steps) longest = std::max(longest, algo::range_text(step.dst, step.count).size() + 1);
  }
  const double col_w = std::max(110.0, detail::kGlyph * static_cast<double>(longest) + 40);
  const double row_h = 64, left = 70, top = 56;
  const double legend_y = top + n * row_h + 8;
  // The legend names only what the picture shows, and the picture is at least as wide as it.
  bool shows[3] = {false, false, false};  // recv (copy), recv+reduce, local step
  for (const auto& steps : schedule.steps) {
    for (const algo::Step& step : steps) {
      if (step.op != algo::Op::send) shows[step.op == algo::Op::recv_copy ? 0 : step.op == algo::Op::recv_reduce ? 1 : 2] = true;
    }
  }
  const char* legend_text[3] = {"recv: copy into the range", "recv+reduce: combine into the range (+)",
                                "local copy/reduce"};
  double legend_w = 0;
  for (int k = 0; k < 3; ++k) {
    if (shows[k]) legend_w += 36 + detail::kGlyph * static_cast<double>(std::string(legend_text[k]).size()) + 24;
  }
  const double title_w = 8.0 * static_cast<double>(algo::summary(schedule).size());  // bold, font-size 13
  const double width = std::max({left + columns * col_w + 20, left + legend_w, left + title_w + 10});
  const double height = legend_y + 40;
  const std::string copy_color = "#1f77b4", reduce_color = "#d62728";

  std::string svg = detail::open_svg(width, height);
  svg += "<defs>\n";
  for (const auto& [id, color] : {std::pair<std::string, std::string>{"copy", copy_color}, {"reduce", reduce_color}}) {
    svg += "<marker id=\"" + id + "\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
           "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"" + color + "\"/></marker>\n";
  }
  svg += "</defs>\n";
  svg += detail::text(left, 20, algo::summary(schedule), "font-size=\"13\" font-weight=\"bold\"");
  auto row_y = [&](int rank) { return top + 14 + rank * row_h + row_h / 2; };
  for (int c = 0; c < columns; ++c) {
    const double x = left + c * col_w;
    svg += detail::text(x + col_w / 2, top, "round " + std::to_string(c), "text-anchor=\"middle\" fill=\"#555\"");
    if (c > 0) svg += detail::line(x, top + 8, x, top + 14 + n * row_h, "stroke=\"#ddd\" stroke-dasharray=\"3,3\"");
  }
  for (int r = 0; r < n; ++r) {
    svg += detail::text(8, row_y(r) + 4, "rank " + std::to_string(r), "font-weight=\"bold\"");
    svg += detail::line(left, row_y(r), left + columns * col_w, row_y(r), "stroke=\"#bbb\"");
  }
  const double pad = 10;
  for (int r = 0; r < n; ++r) {
    const auto& steps = schedule.steps[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const algo::Step& step = steps[i];
      if (step.op == algo::Op::send) continue;  // drawn with its receive
      const double x0 = left + rounds[static_cast<std::size_t>(r)][i] * col_w;
      const std::string label = algo::range_text(step.dst, step.count);
      if (!algo::is_recv(step.op)) {
        svg += detail::rect(x0 + col_w / 2 - 38, row_y(r) - 11, 76, 22, "rx=\"4\" fill=\"#eee\" stroke=\"#888\"");
        svg += detail::text(x0 + col_w / 2, row_y(r) + 4, algo::to_string(step.op), "text-anchor=\"middle\"");
        svg += detail::text(x0 + col_w / 2, row_y(r) + 24, label, "text-anchor=\"middle\" fill=\"#555\"");
        continue;
      }
      const bool reduce = step.op == algo::Op::recv_reduce;
      const double ys = row_y(step.peer), yr = row_y(r);
      svg += "<circle cx=\"" + num(x0 + pad) + "\" cy=\"" + num(ys) + "\" r=\"3\" fill=\"" +
             (reduce ? reduce_color : copy_color) + "\"/>\n";
      svg += detail::line(x0 + pad, ys, x0 + col_w - pad, yr,
                          "stroke=\"" + (reduce ? reduce_color : copy_color) + "\" stroke-width=\"1.6\" marker-end=\"url(#" +
                              (reduce ? "reduce" : "copy") + ")\"");
      // The label sits beside the arrowhead, on the side the arrow does not come from.
      const double label_y = ys < yr ? yr + 15 : yr - 7;
      svg += detail::text(x0 + col_w - pad, label_y, (reduce ? "+" : "") + label,
                          "text-anchor=\"end\" fill=\"" + (reduce ? reduce_color : copy_color) + "\"");
    }
  }
  double x = left;
  const double y = legend_y + 16;
  for (int k = 0; k < 3; ++k) {
    if (!shows[k]) continue;
    if (k < 2) {
      const std::string& color = k == 0 ? copy_color : reduce_color;
      svg += detail::line(x, y, x + 26, y, "stroke=\"" + color + "\" stroke-width=\"1.6\" marker-end=\"url(#" +
                                               (k == 0 ? "copy" : "reduce") + ")\"");
    } else {
      svg += detail::rect(x, y - 9, 26, 18, "rx=\"4\" fill=\"#eee\" stroke=\"#888\"");
    }
    svg += detail::text(x + 36, y + 4, legend_text[k]);
    x += 36 + detail::kGlyph * static_cast<double>(std::string(legend_text[k]).size()) + 24;
  }
  return svg + "</svg>\n";
}

// The fill for an action's kind; later chunks of an interleaved schedule are paler.
inline std::string action_fill(parallel::PipelineOp op) {
  switch (op) {
    case parallel::PipelineOp::forward: return "#6a9fd4";
    case parallel::PipelineOp::backward: return "#f0a04b";
    case parallel::PipelineOp::backward_input: return "#e8716f";
    case parallel::PipelineOp::backward_weight: return "#74b86a";
    default: return "#cccccc";
  }
}

// A Gantt chart of the simulated timeline: one row per stage, one box per action spanning its
// time, labelled with its JSON name ("F3", "1.B3"); idle time is blank.
inline std::string pipeline_svg(const parallel::PipelineSchedule& schedule, const parallel::PipelineTimeline& timeline,
                                const std::string& title) {
  using detail::num;
  const bool show_chunk = schedule.kind == parallel::PipelineKind::interleaved_1f1b;
  std::size_t longest = 2;
  for (const auto& row : timeline.ranks) {
    for (const auto& timed : row) longest = std::max(longest, parallel::to_string(timed.action, show_chunk).size());
  }
  const double unit = std::max(24.0, detail::kGlyph * 0.9 * static_cast<double>(longest) + 8);
  const double row_h = 30, box_h = 24, left = 70, top = 48;
  const double span = timeline.makespan * unit;
  const double legend_y = top + schedule.stages * row_h + 26;
  const double width = std::max({left + span + 80, 560.0, left + 8.0 * static_cast<double>(title.size()) + 10});
  const double height = legend_y + 30;

  std::string svg = detail::open_svg(width, height);
  svg += detail::text(left, 20, title, "font-size=\"13\" font-weight=\"bold\"");
  int tick = 1;  // 1, 2, 5, 10, 20, 50, ...: at most about 30 labelled times
  for (int scale = 1; timeline.makespan / tick > 30; scale *= 10) {
    for (int factor : {1, 2, 5}) {
      tick = factor * scale;
      if (timeline.makespan / tick <= 30) break;
    }
  }
  for (int t = 0; t <= static_cast<int>(timeline.makespan); t += tick) {
    const double x = left + t * unit;
    svg += detail::line(x, top - 4, x, top + schedule.stages * row_h, "stroke=\"#e4e4e4\"");
    svg += detail::text(x, top - 8, std::to_string(t), "text-anchor=\"middle\" fill=\"#777\" font-size=\"9\"");
  }
  for (int r = 0; r < schedule.stages; ++r) {
    const double y = top + r * row_h;
    svg += detail::text(8, y + row_h / 2 + 4, "stage " + std::to_string(r), "font-weight=\"bold\"");
    svg += detail::rect(left, y + (row_h - box_h) / 2, span, box_h, "fill=\"none\" stroke=\"#ccc\"");
    svg += detail::text(left + span + 8, y + row_h / 2 + 4,
                        "peak " + std::to_string(timeline.peak_in_flight[static_cast<std::size_t>(r)]), "fill=\"#555\"");
  }
  // Boxes, then their labels, each in a group that carries the attributes they share.
  std::string boxes = "<g class=\"actions\" stroke=\"white\">\n";
  std::string labels = "<g class=\"labels\" text-anchor=\"middle\" font-size=\"10\">\n";
  for (int r = 0; r < schedule.stages; ++r) {
    const double y = top + r * row_h;
    for (const auto& timed : timeline.ranks[static_cast<std::size_t>(r)]) {
      const double x = left + timed.start * unit, w = (timed.end - timed.start) * unit;
      std::string fill = "fill=\"" + action_fill(timed.action.op) + "\"";
      if (timed.action.chunk > 0) fill += " fill-opacity=\"" + num(1.0 - 0.45 * timed.action.chunk / (schedule.chunks - 1)) + "\"";
      boxes += detail::rect(x, y + (row_h - box_h) / 2, w, box_h, fill);
      labels += detail::text(x + w / 2, y + row_h / 2 + 4, parallel::to_string(timed.action, show_chunk));
    }
  }
  svg += boxes + "</g>\n" + labels + "</g>\n";
  double x = left;
  const double y = legend_y;
  using Op = parallel::PipelineOp;
  const std::vector<std::pair<Op, std::string>> kinds =
      schedule.splits_backward()
          ? std::vector<std::pair<Op, std::string>>{{Op::forward, "F forward"}, {Op::backward_input, "I input grad"},
                                                    {Op::backward_weight, "W weight grad"}}
          : std::vector<std::pair<Op, std::string>>{{Op::forward, "F forward"}, {Op::backward, "B backward"}};
  for (const auto& [op, name] : kinds) {
    svg += detail::rect(x, y - 11, 18, 14, "fill=\"" + action_fill(op) + "\"");
    svg += detail::text(x + 24, y, name);
    x += 24 + detail::kGlyph * static_cast<double>(name.size()) + 18;
  }
  const std::string note = show_chunk ? "c.X: chunk c (paler: later chunk); blank: idle; peak: (chunk, microbatch) in flight"
                                      : "blank: idle; peak: microbatches in flight";
  svg += detail::text(x, y, note, "fill=\"#555\"");
  return svg + "</svg>\n";
}

}  // namespace schedule_svg
