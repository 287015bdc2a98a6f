// One chorus-p2p matrix (rows = source, columns = destination) and its text table, in the layout of
// CUDA's p2pBandwidthLatencyTest. A cell with no value was not measured (the pair is unsupported or the
// diagonal has no meaning for that figure) and prints "n/a", never a number. Standard library only, so
// the CUDA tool prints the same tables.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace p2p {

struct Matrix {
  std::string title;                // e.g. "Unidirectional bandwidth (GB/s)"
  std::string diagonal;             // what the diagonal holds, e.g. "local copy" or "n/a"
  std::vector<std::string> labels;  // one per row and column, e.g. CPU numbers
  std::vector<std::vector<std::optional<double>>> cells;

  Matrix(std::string title_text, std::string diagonal_text, std::vector<std::string> names)
      : title(std::move(title_text)), diagonal(std::move(diagonal_text)), labels(std::move(names)),
        cells(labels.size(), std::vector<std::optional<double>>(labels.size())) {}
};

// The number exactly as the table prints it (the JSON carries full precision; tests compare the two
// through this).
inline std::string format_cell(const std::optional<double>& value) {
  if (!value) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", *value);
  return text;
}

inline void print_matrix(std::FILE* out, const Matrix& m, const std::string& row_name, const std::string& column_name) {
  std::fprintf(out, "%s: rows = %s, columns = %s, diagonal = %s\n", m.title.c_str(), row_name.c_str(),
               column_name.c_str(), m.diagonal.c_str());
  std::fprintf(out, "%9s", "src\\dst");
  for (const auto& label : m.labels) std::fprintf(out, " %9s", label.c_str());
  std::fprintf(out, "\n");
  for (std::size_t row = 0; row < m.labels.size(); ++row) {
    std::fprintf(out, "%9s", m.labels[row].c_str());
    for (const auto& cell : m.cells[row]) std::fprintf(out, " %9s", format_cell(cell).c_str());
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "\n");
}

}  // namespace p2p
