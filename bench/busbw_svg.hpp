// chorus-bench --svg: bus bandwidth against message size, one line per series, log-scale size
// axis (powers of two), linear bandwidth axis from 0. Measured series are drawn solid, predicted ones
// dashed, limits (a bound no run can pass, such as memory bandwidth) dotted. Sizes of 0 bytes have no place
// on a log axis and are left out.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "svg_elements.hpp"

namespace busbw_svg {

enum class Line { measured, predicted, limit };

struct Series {
  std::string name;
  std::vector<std::pair<std::size_t, double>> points;  // (bytes, busbw GB/s), in sweep order
  Line line = Line::measured;
};

inline const char* line_class(Line line) {
  return line == Line::measured ? "measured" : line == Line::predicted ? "predicted" : "limit";
}

// The stroke-dasharray attribute of a line's polyline and legend swatch ("" when solid).
inline std::string line_dashes(Line line) {
  return line == Line::measured ? "" : line == Line::predicted ? " stroke-dasharray=\"6,4\"" : " stroke-dasharray=\"2,3\"";
}

// "1K", "64M", "3G" for powers of two; plain bytes below 1 KiB.
inline std::string size_label(std::size_t bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + units[unit];
}

// A round step for about 5 ticks up to `top`: 1, 2 or 5 times a power of ten.
inline double tick_step(double top) {
  const double raw = top / 5.0;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10.0 * power;
}

inline std::string render(const std::string& title, const std::vector<Series>& series) {
  using namespace svg_elements;
  // The legend column is as wide as the longest name (monospace, about 6.7 px a glyph at 11 px).
  std::size_t longest = 0;
  for (const Series& s : series) longest = std::max(longest, s.name.size());
  constexpr double plot_w = 500, height = 440, left = 64, top = 36, bottom = 48;
  const double right = 70 + 6.7 * static_cast<double>(longest), width = left + plot_w + right;
  constexpr double plot_h = height - top - bottom;
  double lo = 0, hi = 0, peak = 0;
  bool any = false;
  for (const Series& s : series) {
    for (auto [bytes, bw] : s.points) {
      if (bytes == 0) continue;
      const double x = std::log2(static_cast<double>(bytes));
      lo = any ? std::min(lo, x) : x;
      hi = any ? std::max(hi, x) : x;
      peak = std::max(peak, bw);
      any = true;
    }
  }
  lo = std::floor(lo);
  hi = std::max(std::ceil(hi), lo + 1);
  const double step = tick_step(peak > 0 ? peak * 1.05 : 1.0);
  const double y_top = std::max(step, std::ceil(peak * 1.05 / step) * step);
  const auto px = [&](std::size_t bytes) { return left + (std::log2(static_cast<double>(bytes)) - lo) / (hi - lo) * plot_w; };
  const auto py = [&](double bw) { return top + plot_h - bw / y_top * plot_h; };

  std::string svg = open_svg(width, height);
  svg += text(left, 20, title, "font-size=\"13\"");
  svg += "<g class=\"axes\" stroke=\"#888\">\n";
  svg += line(left, top + plot_h, left + plot_w, top + plot_h, "");
  svg += line(left, top, left, top + plot_h, "");
  svg += "</g>\n<g class=\"ticks\">\n";
  const int span = static_cast<int>(hi - lo);
  const int every = std::max(1, (span + 9) / 10);  // at most about 10 size labels
  for (int k = 0; k <= span; ++k) {
    const double x = left + k / (hi - lo) * plot_w;
    svg += line(x, top, x, top + plot_h, "stroke=\"#eee\"");
    if (k % every == 0) {
      svg += text(x, top + plot_h + 16, size_label(std::size_t(1) << static_cast<int>(lo + k)), "text-anchor=\"middle\"");
    }
  }
  for (double v = 0; v <= y_top + step / 2; v += step) {
    svg += line(left, py(v), left + plot_w, py(v), "stroke=\"#eee\"");
    svg += text(left - 6, py(v) + 4, num(v), "text-anchor=\"end\"");
  }
  svg += "</g>\n";
  svg += text(left + plot_w / 2, height - 10, "message size (bytes, log scale)", "text-anchor=\"middle\"");
  svg += text(16, top + plot_h / 2, "busbw (GB/s)",
              "text-anchor=\"middle\" transform=\"rotate(-90 16 " + num(top + plot_h / 2) + ")\"");
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  svg += "<g class=\"series\" fill=\"none\" stroke-width=\"2\">\n";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const std::string colour = colours[i % 8];
    std::string points;
    for (auto [bytes, bw] : s.points) {
      if (bytes == 0) continue;
      points += (points.empty() ? "" : " ") + num(px(bytes)) + "," + num(py(bw));
    }
    svg += "<polyline class=\"" + std::string(line_class(s.line)) + "\" stroke=\"" + colour + "\" points=\"" + points +
           "\"" + line_dashes(s.line) + "/>\n";
    const double ly = top + 14 + 18 * static_cast<double>(i);
    svg += line(left + plot_w + 14, ly - 4, left + plot_w + 44, ly - 4,
                "stroke=\"" + colour + "\"" + line_dashes(s.line));
    svg += text(left + plot_w + 50, ly, s.name, "stroke=\"none\" fill=\"black\"");
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace busbw_svg
