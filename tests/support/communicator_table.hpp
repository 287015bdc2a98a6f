// The per-communicator table of docs/communicator.md ("What each communicator does"), parsed, so a
// test can compare each row with the code: table_row("chorus::host::Comm").memory against
// chorus::memory_space_v<chorus::host::Comm>, and so on. The format is fixed (the header row below,
// then one row per communicator, yes/no and host/device as the only words in those columns), and
// anything else in the table is an error, so a row edited out of shape fails the test instead of
// being skipped. A test program that uses table_row() defines CHORUS_DOCS_DIR (the docs folder) as
// tests/runtime/meson.build does.
#pragma once

#include <chorus/core/memory_space.hpp>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace support {

struct CommunicatorRow {
  std::string name;  // the first column without its backticks: "chorus::host::Comm"
  bool completes_on_return = false;
  chorus::MemorySpace memory = chorus::MemorySpace::host;
  bool checks_agreement = false;
  std::string agreement;  // the whole cell: "yes: ..." or "no: ..."
  bool refuses_overlap = false;
  std::string algorithms;
};

namespace table_detail {

inline const char* const kHeader =
    "| communicator | completes on return | memory | checks agreement | refuses overlapping buffers | takes Algorithm on |";
inline const char* const kRule = "|---|---|---|---|---|---|";

[[noreturn]] inline void malformed(std::size_t line, const std::string& why) {
  throw std::runtime_error("docs/communicator.md line " + std::to_string(line) + ": " + why);
}

inline std::string trimmed(const std::string& s) {
  const std::size_t first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

inline bool yes_no(const std::string& cell, std::size_t line, const char* column) {
  if (cell == "yes") return true;
  if (cell == "no") return false;
  malformed(line, std::string(column) + " is '" + cell + "', not yes or no");
}

inline CommunicatorRow parse_row(const std::string& text, std::size_t line) {
  if (text.size() < 2 || text.front() != '|' || text.back() != '|') malformed(line, "a row must start and end with |");
  std::vector<std::string> cells;
  std::size_t start = 1;
  for (std::size_t bar = text.find('|', start); bar != std::string::npos; bar = text.find('|', start)) {
    cells.push_back(trimmed(text.substr(start, bar - start)));
    start = bar + 1;
  }
  if (cells.size() != 6) malformed(line, std::to_string(cells.size()) + " columns, not 6");
  CommunicatorRow row;
  const std::string& name = cells[0];
  if (name.size() < 3 || name.front() != '`' || name.back() != '`') malformed(line, "the communicator is not in backticks");
  row.name = name.substr(1, name.size() - 2);
  row.completes_on_return = yes_no(cells[1], line, "completes on return");
  if (cells[2] == "host") {
    row.memory = chorus::MemorySpace::host;
  } else if (cells[2] == "device") {
    row.memory = chorus::MemorySpace::device;
  } else {
    malformed(line, "memory is '" + cells[2] + "', not host or device");
  }
  row.agreement = cells[3];
  const std::size_t colon = cells[3].find(':');
  row.checks_agreement = yes_no(colon == std::string::npos ? cells[3] : cells[3].substr(0, colon), line, "checks agreement");
  row.refuses_overlap = yes_no(cells[4], line, "refuses overlapping buffers");
  row.algorithms = cells[5];
  if (row.algorithms.empty()) malformed(line, "takes Algorithm on is empty");
  return row;
}

}  // namespace table_detail

// Every row of the table in `markdown`, in order. Throws std::runtime_error naming the line when the
// table is missing, empty, malformed, or names a communicator twice.
inline std::vector<CommunicatorRow> communicator_table(const std::string& markdown) {
  std::istringstream in(markdown);
  std::string text;
  std::size_t line = 0;
  while (std::getline(in, text) && (++line, text != table_detail::kHeader)) {
  }
  if (text != table_detail::kHeader) table_detail::malformed(line, "no table whose header is " + std::string(table_detail::kHeader));
  if (!std::getline(in, text) || (++line, text != table_detail::kRule)) {
    table_detail::malformed(line, "the header is not followed by " + std::string(table_detail::kRule));
  }
  std::vector<CommunicatorRow> rows;
  while (std::getline(in, text) && !text.empty()) {
    CommunicatorRow row = table_detail::parse_row(text, ++line);
    for (const CommunicatorRow& earlier : rows) {
      if (earlier.name == row.name) table_detail::malformed(line, row.name + " has a second row");
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) table_detail::malformed(line, "the table has no rows");
  return rows;
}

#ifdef CHORUS_DOCS_DIR
inline std::string communicator_doc() {
  const std::string path = std::string(CHORUS_DOCS_DIR) + "/communicator.md";
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The row of communicator `name` (as the table writes it, e.g. "chorus::cuda::IpcComm").
inline CommunicatorRow table_row(const std::string& name) {
  for (CommunicatorRow& row : communicator_table(communicator_doc())) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("docs/communicator.md has no row for " + name);
}
#endif

}  // namespace support
