// chorus-bench's outputs beside nccl-tests' table: the predicted columns (--predict), the CSV
// file (--csv), the SVG series (--svg) and the progress line on a terminal. The table itself is
// chorus/bench/table.hpp's, untouched: predicted cells are appended after its last column.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <chorus/bench/table.hpp>
#include <chorus/core/error.hpp>
#include <chorus/model/predict.hpp>

#include "busbw_svg.hpp"

namespace bench_outputs {

namespace bench = chorus::bench;

inline constexpr int kPredictedTimeWidth = 8, kPredictedBwWidth = 6;

// table_header() with "predicted  time  busbw" appended to its three lines.
inline std::string header_with_prediction(const std::string& header) {
  const std::string cells[3] = {
      bench::detail::printf_string("  %*s", kPredictedTimeWidth + 2 + kPredictedBwWidth, "predicted"),
      bench::detail::printf_string("  %*s  %*s", kPredictedTimeWidth, "time", kPredictedBwWidth, "busbw"),
      bench::detail::printf_string("  %*s  %*s", kPredictedTimeWidth, "(us)", kPredictedBwWidth, "(GB/s)")};
  std::string out;
  std::size_t start = 0;
  for (int line = 0; line < 3; ++line) {
    const std::size_t end = header.find('\n', start);
    std::string text = header.substr(start, end - start);
    // The group line is trimmed short: pad it to the names line's width so the cell lines up.
    const std::size_t names_width = header.find('\n', end + 1) - end - 1;
    if (line == 0 && text.size() < names_width) text.resize(names_width, ' ');
    out += text + cells[line] + "\n";
    start = end + 1;
  }
  return out;
}

// A formatted row (ending in '\n') with the predicted time and busbw appended.
inline std::string row_with_prediction(std::string row, const chorus::model::Prediction& p) {
  if (!row.empty() && row.back() == '\n') row.pop_back();
  return row + bench::detail::printf_string("  %*s  %*.2f\n", kPredictedTimeWidth,
                                            bench::format_time_us(p.time_us * 1e-6).c_str(), kPredictedBwWidth,
                                            p.busbw_GBps);
}

inline std::string csv_cell(const std::optional<std::size_t>& wrong) {
  return wrong ? std::to_string(*wrong) : std::string();
}

// One line per row; predicted columns are empty without --predict. Numbers at full precision.
inline void write_csv(const std::string& path, const std::vector<bench::Row>& rows,
                      const std::vector<std::optional<chorus::model::Prediction>>& predicted) {
  std::ofstream file(path);
  file << "size_bytes,count,type,redop,root,oop_time_us,oop_algbw_gbps,oop_busbw_gbps,oop_wrong,"
          "ip_time_us,ip_algbw_gbps,ip_busbw_gbps,ip_wrong,predicted_algorithm,predicted_time_us,predicted_busbw_gbps\n";
  file.precision(9);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bench::Row& r = rows[i];
    file << r.bytes << ',' << r.elements << ',' << r.type << ',' << r.redop << ',' << r.root << ','
         << r.out_of_place.seconds * 1e6 << ',' << r.out_of_place.algbw << ',' << r.out_of_place.busbw << ','
         << csv_cell(r.out_of_place.wrong) << ',' << r.in_place.seconds * 1e6 << ',' << r.in_place.algbw << ','
         << r.in_place.busbw << ',' << csv_cell(r.in_place.wrong) << ',';
    if (i < predicted.size() && predicted[i]) {
      file << chorus::algo::to_string(predicted[i]->pattern) << ',' << predicted[i]->time_us << ','
           << predicted[i]->busbw_GBps;
    } else {
      file << ",,";
    }
    file << '\n';
  }
  if (!file) throw chorus::Error(chorus::ErrorCode::invalid_argument, "cannot write CSV to " + path);
}

// Series for the plot: out-of-place and in-place busbw per (type, op, root), and the prediction.
inline std::vector<busbw_svg::Series> plot_series(const std::vector<bench::Row>& rows,
                                                  const std::vector<std::optional<chorus::model::Prediction>>& predicted,
                                                  const std::string& label) {
  std::vector<busbw_svg::Series> series;
  const auto series_for = [&](const std::string& name, bool dashed) -> busbw_svg::Series& {
    for (auto& s : series) {
      if (s.name == name) return s;
    }
    series.push_back({name, {}, dashed ? busbw_svg::Line::predicted : busbw_svg::Line::measured});
    return series.back();
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bench::Row& r = rows[i];
    std::string key = label + " " + r.type;
    if (r.redop != "none") key += " " + r.redop;
    if (r.root >= 0) key += " root " + std::to_string(r.root);
    series_for(key + " out-of-place", false).points.push_back({r.bytes, r.out_of_place.busbw});
    series_for(key + " in-place", false).points.push_back({r.bytes, r.in_place.busbw});
    if (i < predicted.size() && predicted[i]) {
      series_for(key + " predicted", true).points.push_back({r.bytes, predicted[i]->busbw_GBps});
    }
  }
  return series;
}

inline void write_svg(const std::string& path, const std::string& title, const std::vector<busbw_svg::Series>& series) {
  std::ofstream file(path);
  file << busbw_svg::render(title, series);
  if (!file) throw chorus::Error(chorus::ErrorCode::invalid_argument, "cannot write SVG to " + path);
}

// Fails before a long benchmark, not after it: the file is opened (and created) up front.
inline void probe_writable(const std::string& path, const char* what) {
  if (path.empty()) return;
  std::ofstream probe(path, std::ios::app);
  if (!probe) throw chorus::Error(chorus::ErrorCode::invalid_argument, std::string("cannot write ") + what + " to " + path);
}

// "[3/12] all_reduce 4194304 B float sum, 12.3 s" on one rewritten stderr line, only when stderr
// is a terminal (a log file gets no carriage returns) and only once the sweep has run for a
// second (short runs stay quiet).
class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), enabled_(isatty(STDERR_FILENO) != 0) {}
  void starting(std::size_t index, const char* collective, std::size_t bytes, const std::string& what) {
    if (!enabled_) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 1.0) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s %zu B %s, %.1f s", index + 1, total_, collective, bytes, what.c_str(),
                 elapsed);
    std::fflush(stderr);
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  std::size_t total_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace bench_outputs
