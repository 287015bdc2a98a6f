// The nccl-tests result table: a three-line header, one row per (size, type, op, root), and the
// footer with the wrong-value count and the average bus bandwidth. Columns line up with
// nccl-tests' so scripts that parse its output (split on whitespace, skip '#' lines) read ours.
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

// One timed placement (out-of-place or in-place) of one row.
struct Result {
  double seconds = 0.0;  // per call: the slowest rank's time
  double algbw = 0.0;    // GB/s
  double busbw = 0.0;    // GB/s
  std::optional<std::size_t> wrong;  // mismatching elements summed over ranks; empty: not checked
};

inline Result make_result(Collective collective, int ranks, std::size_t bytes, double seconds,
                          std::optional<std::size_t> wrong) {
  return Result{seconds, algbw_gbps(bytes, seconds), busbw_gbps(collective, ranks, bytes, seconds), wrong};
}

struct Row {
  std::size_t bytes = 0;     // "size": the larger of the send and receive buffers
  std::size_t elements = 0;  // "count": the sweep's bytes / element size
  std::string type;          // nccl-tests spelling: float, half, ...
  std::string redop;         // "none" for collectives that do not reduce
  int root = -1;             // -1 for collectives without a root
  Result out_of_place;
  Result in_place;
};

namespace detail {

// Field widths shared by the header and the rows so they cannot drift apart.
inline constexpr int kSizeWidth = 12, kCountWidth = 12, kTypeWidth = 8, kOpWidth = 6, kRootWidth = 6;
inline constexpr int kTimeWidth = 7, kBwWidth = 6, kWrongWidth = 6;
inline constexpr int kHalfWidth = 2 + kTimeWidth + 2 + kBwWidth + 2 + kBwWidth + 2 + kWrongWidth;
inline constexpr int kLeadWidth = kSizeWidth + 2 + kCountWidth + 2 + kTypeWidth + 2 + kOpWidth + 2 + kRootWidth;

template <class... Args>
std::string printf_string(const char* format, Args... args) {
  char buffer[256];
  const int length = std::snprintf(buffer, sizeof buffer, format, args...);
  return std::string(buffer, static_cast<std::size_t>(length < 0 ? 0 : length));
}

inline std::string lead_cells(const char* size, const char* count, const char* type, const char* op,
                              const char* root) {
  return printf_string("#%*s  %*s  %*s  %*s  %*s", kSizeWidth - 1, size, kCountWidth, count, kTypeWidth, type,
                       kOpWidth, op, kRootWidth, root);
}

inline std::string half_cells(const char* time, const char* algbw, const char* busbw, const char* wrong) {
  return printf_string("  %*s  %*s  %*s  %*s", kTimeWidth, time, kBwWidth, algbw, kBwWidth, busbw, kWrongWidth,
                       wrong);
}

inline std::string centred(const std::string& text, int width) {
  const int left = (width - static_cast<int>(text.size())) / 2;
  std::string out(static_cast<std::size_t>(left > 0 ? left : 0), ' ');
  out += text;
  out.resize(static_cast<std::size_t>(width), ' ');
  return out;
}

inline void trim_right(std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
}

}  // namespace detail

// Microseconds in 7 characters: two decimals below 100 us, one below 10 ms, none above.
inline std::string format_time_us(double seconds) {
  const double us = seconds * 1.0e6;
  const char* format = us < 100.0 ? "%.2f" : us < 10000.0 ? "%.1f" : "%.0f";
  return detail::printf_string(format, us);
}

namespace detail {
inline std::string result_cells(const Result& result) {
  const std::string wrong = result.wrong ? std::to_string(*result.wrong) : std::string("N/A");
  return printf_string("  %*s  %*.2f  %*.2f  %*s", kTimeWidth, format_time_us(result.seconds).c_str(), kBwWidth,
                       result.algbw, kBwWidth, result.busbw, kWrongWidth, wrong.c_str());
}

}  // namespace detail

// Three lines, each ending in '\n'.
inline std::string table_header() {
  using namespace detail;
  std::string group = "#" + std::string(static_cast<std::size_t>(kLeadWidth - 1), ' ') +
                      centred("out-of-place", kHalfWidth) + centred("in-place", kHalfWidth);
  std::string names = lead_cells("size", "count", "type", "redop", "root") +
                      half_cells("time", "algbw", "busbw", "#wrong") + half_cells("time", "algbw", "busbw", "#wrong");
  std::string units = lead_cells("(B)", "(elements)", "", "", "") + half_cells("(us)", "(GB/s)", "(GB/s)", "") +
                      half_cells("(us)", "(GB/s)", "(GB/s)", "");
  for (auto* line : {&group, &names, &units}) trim_right(*line);
  return group + "\n" + names + "\n" + units + "\n";
}

// One line, ending in '\n'.
inline std::string format_row(const Row& row) {
  using namespace detail;
  return printf_string("%*zu  %*zu  %*s  %*s  %*d", kSizeWidth, row.bytes, kCountWidth, row.elements, kTypeWidth,
                       row.type.c_str(), kOpWidth, row.redop.c_str(), kRootWidth, row.root) +
         result_cells(row.out_of_place) + result_cells(row.in_place) + "\n";
}

// Mean busbw over every row, out-of-place and in-place alike, as nccl-tests averages it.
inline double average_busbw(const std::vector<Row>& rows) {
  if (rows.empty()) return 0.0;
  double sum = 0.0;
  for (const Row& row : rows) sum += row.out_of_place.busbw + row.in_place.busbw;
  return sum / (2.0 * static_cast<double>(rows.size()));
}

inline std::size_t total_wrong(const std::vector<Row>& rows) {
  std::size_t sum = 0;
  for (const Row& row : rows) sum += row.out_of_place.wrong.value_or(0) + row.in_place.wrong.value_or(0);
  return sum;
}

// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", "#".
inline std::string table_footer(std::size_t wrong, double avg_busbw) {
  std::ostringstream out;
  out << "# Out of bounds values : " << wrong << (wrong == 0 ? " OK" : " FAILED") << "\n"
      << "# Avg bus bandwidth    : " << avg_busbw << "\n"
      << "#\n";
  return out.str();
}

inline std::string table_footer(const std::vector<Row>& rows) {
  return table_footer(total_wrong(rows), average_busbw(rows));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
