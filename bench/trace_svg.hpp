// chorus-trace-svg's picture: a timeline (trace_timeline.hpp) drawn as Perfetto lays out a trace-event
// file, as hand-written SVG: a time axis across the top, one track per thread (per rank, for chorus's
// step trace) with its name on the left, nested slices stacked one row per depth and coloured by name,
// and an arrow per flow from the point where it starts (in the sending slice) to the point where it
// finishes (in the receiving slice). Each slice's tooltip (<title>) holds its times and args.
// Like Perfetto's first view it fits the whole trace; a window (Options::from_ns, to_ns) zooms in, as
// dragging in Perfetto does: everything is still drawn, clipped to the plot.
// Tool-local (bench/): the chorus headers never write SVG.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "svg_elements.hpp"
#include "trace_timeline.hpp"

namespace trace_svg {

struct Options {
  double width = 1200;      // pixels
  std::string title;        // empty: the trace's process name
  std::string source;       // the file the picture was drawn from, printed under the title
  // The window shown, in ns after the trace's first slice (the axis's 0); to_ns <= from_ns: all of it.
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0;
};

namespace detail {

using svg_elements::line;
using svg_elements::num;
using svg_elements::rect;
using svg_elements::text;

constexpr double kLabelWidth = 96;  // the track names' column
constexpr double kRight = 16;
constexpr double kRowHeight = 20;
constexpr double kTrackPad = 5;
constexpr double kCharWidth = 6.6;  // monospace at font-size 11

// Perfetto colours slices by a hash of their name, so equal names share a colour across tracks.
inline const char* colour_of(const std::string& name) {
  static const char* const kPalette[] = {"#3f51b5", "#00897b", "#e65100", "#8e24aa", "#1e88e5",
                                         "#c62828", "#558b2f", "#6d4c41", "#00838f", "#ad1457"};
  std::uint32_t hash = 2166136261u;  // FNV-1a: the same colours on every platform
  for (unsigned char c : name) hash = (hash ^ c) * 16777619u;
  return kPalette[hash % (sizeof kPalette / sizeof kPalette[0])];
}

// A tick step of 1, 2 or 5 times a power of ten nanoseconds giving at most about `ticks` ticks.
inline std::int64_t tick_step(std::int64_t span_ns, int ticks) {
  std::int64_t step = 1;
  for (;;) {
    for (std::int64_t factor : {1, 2, 5}) {
      if (span_ns / (step * factor) <= ticks) return step * factor;
    }
    step *= 10;
  }
}

// "0", "250 ns", "1.5 µs", "12 ms": in the unit the step is counted in.
inline std::string time_label(std::int64_t ns, std::int64_t step) {
  if (ns == 0) return "0";
  const char* unit = step >= 1000000 ? "ms" : step >= 1000 ? "\xC2\xB5s" : "ns";
  const double scale = step >= 1000000 ? 1e6 : step >= 1000 ? 1e3 : 1.0;
  return num(static_cast<double>(ns) / scale) + " " + unit;
}

// The name cut to what fits in `pixels`, with an ellipsis where it was cut; "" when nothing fits.
inline std::string fitted(const std::string& name, double pixels) {
  const auto fits = static_cast<std::size_t>(std::max(0.0, (pixels - 4) / kCharWidth));
  if (name.size() <= fits) return name;
  if (fits < 2) return "";
  return name.substr(0, fits - 1) + "\xE2\x80\xA6";
}

inline std::string micros(std::int64_t ns) { return num(static_cast<double>(ns) / 1000.0) + " \xC2\xB5s"; }

}  // namespace detail

inline std::string render(const trace_timeline::Timeline& timeline, const Options& options) {
  using namespace detail;
  const double width = std::max(options.width, kLabelWidth + kRight + 100);
  const double plot_left = kLabelWidth;
  const double plot_width = width - kLabelWidth - kRight;
  const bool windowed = options.to_ns > options.from_ns;
  const std::int64_t view_begin = timeline.begin_ns + (windowed ? options.from_ns : 0);
  const std::int64_t view_end = windowed ? timeline.begin_ns + options.to_ns : timeline.end_ns;
  const std::int64_t span = std::max<std::int64_t>(view_end - view_begin, 1);
  const auto x_of = [&](std::int64_t ns) {
    return plot_left + static_cast<double>(ns - view_begin) * plot_width / static_cast<double>(span);
  };
  const double axis_top = options.source.empty() ? 30 : 44;
  const double tracks_top = axis_top + 22;
  std::vector<double> track_top;
  double y = tracks_top;
  for (const trace_timeline::Track& track : timeline.tracks) {
    track_top.push_back(y);
    y += 2 * kTrackPad + track.rows * kRowHeight;
  }
  const double height = y + 8;
  const auto row_middle = [&](const trace_timeline::FlowEnd& end) {
    const trace_timeline::Slice& slice = timeline.tracks[end.track].slices[end.slice];
    return track_top[end.track] + kTrackPad + slice.depth * kRowHeight + kRowHeight / 2;
  };

  std::string svg = svg_elements::open_svg(width, height);
  svg += "<defs><clipPath id=\"plot\">" + rect(plot_left, 0, plot_width, height, "") + "</clipPath>";
  svg += "<marker id=\"flow-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
         "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#212121\"/></marker></defs>\n";
  const std::string title = options.title.empty() ? (timeline.process.empty() ? "trace" : timeline.process) : options.title;
  svg += text(8, 18, title, "font-size=\"13\" font-weight=\"bold\"");
  if (!options.source.empty()) svg += text(8, 34, options.source, "fill=\"#616161\"");

  // The axis: time since the first slice's start, with grid lines through every track.
  const std::int64_t step = tick_step(span, static_cast<int>(plot_width / 90));
  svg += "<g class=\"axis\" fill=\"#424242\">\n";
  svg += line(plot_left, axis_top + 14, plot_left + plot_width, axis_top + 14, "stroke=\"#9e9e9e\"");
  const std::int64_t first_tick = (view_begin - timeline.begin_ns + step - 1) / step * step;
  for (std::int64_t at = first_tick; timeline.begin_ns + at <= view_end; at += step) {
    const double x = x_of(timeline.begin_ns + at);
    svg += line(x, axis_top + 10, x, height - 8, "stroke=\"#e0e0e0\"");
    const std::string label = time_label(at, step);
    if (x + 2 + kCharWidth * static_cast<double>(label.size()) <= width) svg += text(x + 2, axis_top + 9, label);  // not cut off
  }
  svg += "</g>\n";

  svg += "<g class=\"tracks\">\n";
  for (std::size_t t = 0; t < timeline.tracks.size(); ++t) {
    const trace_timeline::Track& track = timeline.tracks[t];
    const double h = 2 * kTrackPad + track.rows * kRowHeight;
    if (t % 2 == 1) svg += rect(0, track_top[t], width, h, "fill=\"#000000\" fill-opacity=\"0.03\"");
    svg += line(0, track_top[t], width, track_top[t], "stroke=\"#bdbdbd\"");
    svg += text(8, track_top[t] + kTrackPad + kRowHeight / 2 + 4, track.name);
  }
  svg += "</g>\n";

  // One rect per slice, its label where it fits, its details in a tooltip.
  std::string labels = "<g class=\"slice-labels\" fill=\"white\" pointer-events=\"none\" clip-path=\"url(#plot)\">\n";
  svg += "<g class=\"slices\" stroke=\"white\" stroke-width=\"0.5\" clip-path=\"url(#plot)\">\n";
  for (std::size_t t = 0; t < timeline.tracks.size(); ++t) {
    for (const trace_timeline::Slice& slice : timeline.tracks[t].slices) {
      const double x = x_of(slice.start_ns);
      const double w = std::max(x_of(slice.end_ns) - x, 0.75);  // an instant still shows
      const double top = track_top[t] + kTrackPad + slice.depth * kRowHeight + 1;
      const std::string tooltip = slice.name + (slice.category.empty() ? "" : " (" + slice.category + ")") + ": from " +
                                  micros(slice.start_ns - timeline.begin_ns) + " for " + micros(slice.end_ns - slice.start_ns) +
                                  (slice.args.empty() ? "" : " " + slice.args);
      svg += "<rect x=\"" + num(x) + "\" y=\"" + num(top) + "\" width=\"" + num(w) + "\" height=\"" + num(kRowHeight - 2) +
             "\" fill=\"" + colour_of(slice.name) + "\"><title>" + chorus::topo::xml::escape(tooltip) + "</title></rect>\n";
      const double shown_left = std::max(x, plot_left);  // a slice begun before the window is labelled at its edge
      const std::string label = fitted(slice.name, std::min(x + w, plot_left + plot_width) - shown_left);
      if (!label.empty()) labels += text(shown_left + 2, top + kRowHeight / 2 + 3, label);
    }
  }
  svg += "</g>\n" + labels + "</g>\n";

  // One arrow per flow, curving from its start to its finish as Perfetto draws them.
  svg += "<g class=\"flows\" fill=\"none\" stroke=\"#212121\" stroke-width=\"1\" clip-path=\"url(#plot)\">\n";
  for (const trace_timeline::Flow& flow : timeline.flows) {
    const double x1 = x_of(flow.from.at_ns), y1 = row_middle(flow.from);
    const double x2 = x_of(flow.to.at_ns), y2 = row_middle(flow.to);
    const double bend = std::max(12.0, std::fabs(x2 - x1) / 2);
    svg += "<path d=\"M" + num(x1) + "," + num(y1) + " C" + num(x1 + bend) + "," + num(y1) + " " + num(x2 - bend) + "," +
           num(y2) + " " + num(x2) + "," + num(y2) + "\" marker-end=\"url(#flow-arrow)\"/>\n";
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace trace_svg
