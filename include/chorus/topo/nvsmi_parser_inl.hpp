// nvsmi_parser.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by nvsmi_parser.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "cpuset.hpp"
#include "nvsmi_parser.hpp"
#include "path_class.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
CHORUS_FUNC Error nvsmi_error(int line, const std::string& what) {
  return topo_error("read_nvsmi", line > 0 ? chorus::detail::concat("line ", line, ": ", what) : what);
}

// Removes ANSI escape sequences (nvidia-smi underlines the header on a terminal) and the CR of
// CRLF files.
CHORUS_FUNC std::string strip_terminal_codes(std::string_view line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      ++i;
      if (i < line.size() && line[i] == '[') {
        ++i;
        while (i < line.size() && !((line[i] >= 'A' && line[i] <= 'Z') || (line[i] >= 'a' && line[i] <= 'z'))) ++i;
      }
      continue;  // the loop's ++i steps over the final letter
    }
    if (line[i] == '\r') continue;
    out += line[i];
  }
  return out;
}

CHORUS_FUNC std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\v' || line[i] == '\f')) ++i;
    const std::size_t start = i;
    while (i < line.size() && !(line[i] == ' ' || line[i] == '\t' || line[i] == '\v' || line[i] == '\f')) ++i;
    if (i > start) words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

CHORUS_FUNC bool is_gpu_label(const std::string& word, int& index) {
  if (word.size() < 4 || word.size() > 7 || word.compare(0, 3, "GPU") != 0) return false;
  int value = 0;
  for (std::size_t i = 3; i < word.size(); ++i) {
    if (word[i] < '0' || word[i] > '9') return false;
    value = value * 10 + (word[i] - '0');
  }
  index = value;
  return true;
}

CHORUS_FUNC std::optional<int> parse_small_int(const std::string& word) {
  if (word.empty() || word.size() > 6) return std::nullopt;
  int value = 0;
  for (char c : word) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

enum class Extra { cpu_affinity, numa_affinity, gpu_numa_id };

// The input's lines, terminal colour codes removed.
CHORUS_FUNC std::vector<std::string> nvsmi_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(strip_terminal_codes(text.substr(start, end - start)));
    start = end + 1;
  }
  return lines;
}

// The header is the first line whose first word is GPU0 (rows come after it); its index.
CHORUS_FUNC std::size_t nvsmi_header(const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto words = split_words(lines[i]);
    if (words.empty() || words[0] != "GPU0") continue;
    if (words.size() > 1 && parse_smi_token(words[1])) {
      throw nvsmi_error(static_cast<int>(i) + 1, "found the GPU0 row before any header line (GPU0 GPU1 ...)");
    }
    return i;
  }
  throw nvsmi_error(0, "no header line starting with GPU0; expected the output of `nvidia-smi topo -m`");
}

// The header's device columns (GPUs, then NICs) into m.labels and m.gpus; returns the affinity columns after them.
CHORUS_FUNC std::vector<Extra> read_nvsmi_header(const std::vector<std::string>& head, int header_line, NvsmiMatrix& m) {
  std::size_t w = 0;
  for (; w < head.size(); ++w) {
    const std::string& word = head[w];
    if (word == "CPU" || word == "NUMA" || (word == "GPU" && w + 1 < head.size() && head[w + 1] == "NUMA")) break;
    int index = 0;
    if (is_gpu_label(word, index)) {
      if (!m.labels.empty() && m.gpus != static_cast<int>(m.labels.size())) {
        throw nvsmi_error(header_line, "GPU column " + word + " comes after a NIC column");
      }
      if (index != m.gpus) {
        throw nvsmi_error(header_line, chorus::detail::concat("expected column GPU", m.gpus, ", found ", excerpt(word)));
      }
      ++m.gpus;
    } else if (!is_nic_name(word)) {
      throw nvsmi_error(header_line, "'" + excerpt(word) + "' is not a device name");
    }
    for (const std::string& seen : m.labels) {
      if (seen == word) throw nvsmi_error(header_line, "column " + excerpt(word) + " appears twice");
    }
    m.labels.push_back(word);
    if (static_cast<int>(m.labels.size()) > kMaxNvsmiDevices) {
      throw nvsmi_error(header_line, chorus::detail::concat("more than ", kMaxNvsmiDevices, " devices"));
    }
  }
  std::vector<Extra> extras;
  while (w < head.size()) {
    const auto phrase = [&](std::initializer_list<const char*> words) {
      std::size_t k = 0;
      for (const char* expected : words) {
        if (w + k >= head.size() || head[w + k] != expected) return false;
        ++k;
      }
      w += k;
      return true;
    };
    if (phrase({"CPU", "Affinity"})) {
      extras.push_back(Extra::cpu_affinity);
      m.has_cpu_affinity = true;
    } else if (phrase({"NUMA", "Affinity"})) {
      extras.push_back(Extra::numa_affinity);
      m.has_numa_affinity = true;
    } else if (phrase({"GPU", "NUMA", "ID"})) {
      extras.push_back(Extra::gpu_numa_id);
    } else {
      throw nvsmi_error(header_line, "unknown column heading '" + excerpt(head[w]) +
                                         "'; expected CPU Affinity, NUMA Affinity or GPU NUMA ID");
    }
  }
  if (m.gpus == 0) throw nvsmi_error(header_line, "the header names no GPU columns");
  return extras;
}

// Row `row`'s matrix cells (words[1..d]), each checked: a known token, X exactly on the diagonal, no NVLink to a NIC.
CHORUS_FUNC void read_nvsmi_cells(NvsmiMatrix& m, const std::vector<std::string>& words, int row, int line) {
  const int d = m.devices();
  if (static_cast<int>(words.size()) < 1 + d) {
    throw nvsmi_error(line, chorus::detail::concat("row ", words[0], " has ", words.size() - 1, " entries, the header has ",
                                                   d, " device columns"));
  }
  for (int col = 0; col < d; ++col) {
    const std::string& cell = words[1 + col];
    const auto token = parse_smi_token(cell);
    if (!token) {
      throw nvsmi_error(line, "row " + words[0] + ", column " + m.labels[col] + ": '" + excerpt(cell) +
                                  "' is not one of X, NV<n>, PIX, PXB, PHB, NODE, SYS, SOC");
    }
    if ((token->cls == SmiClass::self) != (col == row)) {
      throw nvsmi_error(line, "row " + words[0] + ", column " + m.labels[col] + ": " +
                                  (col == row ? "expected X on the diagonal, found " + excerpt(cell)
                                              : std::string("X off the diagonal")));
    }
    if (token->cls == SmiClass::nvlink && (row >= m.gpus || col >= m.gpus)) {
      throw nvsmi_error(line, "row " + words[0] + ", column " + m.labels[col] + ": " + cell +
                                  " joins a NIC, but NICs have no NVLink");
    }
    m.cells[row][col] = token;
  }
}

// Row `row`'s affinity columns after its cells (GPU rows only).
CHORUS_FUNC void read_nvsmi_extras(NvsmiMatrix& m, const std::vector<std::string>& words, int row, int line,
                                   const std::vector<Extra>& extras) {
  const auto d = static_cast<std::size_t>(m.devices());
  const std::size_t values = words.size() - 1 - d;
  if (row >= m.gpus && values > 0) {
    throw nvsmi_error(line, chorus::detail::concat("row ", words[0], " has ", words.size() - 1, " entries, the header has ",
                                                   d, " device columns"));
  }
  if (values > extras.size()) {
    throw nvsmi_error(line, chorus::detail::concat("row ", words[0], " has ", words.size() - 1, " entries, the header has ",
                                                   d, " device columns and ", extras.size(), " affinity column(s)"));
  }
  for (std::size_t k = 0; k < values; ++k) {
    const std::string& value = words[1 + d + k];
    if (value == "N/A") continue;
    if (extras[k] == Extra::cpu_affinity) {
      if (!parse_cpulist(value)) {
        throw nvsmi_error(line, "row " + words[0] + ": CPU Affinity '" + excerpt(value) +
                                    "' is not a CPU list like 0-19,40-59 (a matrix cell too many?)");
      }
      m.cpu_affinity[row] = value;
    } else if (extras[k] == Extra::numa_affinity) {
      // The kernel's list spelling, as for CPUs.
      const auto nodes = parse_cpulist(value);
      if (!nodes) {
        throw nvsmi_error(line, "row " + words[0] + ": NUMA Affinity '" + excerpt(value) +
                                    "' is not a NUMA node list like 0 or 0,5-11");
      }
      const auto lowest = std::find(nodes->begin(), nodes->end(), true);
      if (lowest == nodes->end()) continue;
      m.numa_affinity_list[row] = value;
      m.numa_affinity[row] = static_cast<int>(lowest - nodes->begin());
    } else {
      const auto number = parse_small_int(value);
      if (!number) throw nvsmi_error(line, "row " + words[0] + ": GPU NUMA ID '" + excerpt(value) + "' is not a number");
      m.gpu_numa_id[row] = *number;
    }
  }
}

// Every GPU needs its row; the error names the line where the missing one should have been.
CHORUS_FUNC void check_every_gpu_row(const NvsmiMatrix& m, int header_line, const std::vector<std::string>& lines) {
  for (int k = 0; k < m.gpus; ++k) {
    if (m.row_line[k] != 0) continue;
    // The first row after GPU k-1's.
    const int after = k == 0 ? header_line : m.row_line[k - 1];
    int found = -1;
    for (int other = 0; other < m.devices(); ++other) {
      if (m.row_line[other] > after && (found < 0 || m.row_line[other] < m.row_line[found])) found = other;
    }
    if (found >= 0) {
      throw nvsmi_error(m.row_line[found], "expected the row for " + m.labels[k] + ", found the row for " + m.labels[found]);
    }
    int last = static_cast<int>(lines.size());
    while (last > 1 && split_words(lines[static_cast<std::size_t>(last) - 1]).empty()) --last;
    throw nvsmi_error(last, "the input ends before the row for " + m.labels[k]);
  }
}

// Each pair must read the same both ways; a cell no row gave takes its mirror's value.
CHORUS_FUNC void symmetrise(NvsmiMatrix& m) {
  for (int a = 0; a < m.devices(); ++a) {
    for (int b = a + 1; b < m.devices(); ++b) {
      const auto& ab = m.cells[a][b];
      const auto& ba = m.cells[b][a];
      if (ab && ba && *ab != *ba) {
        throw nvsmi_error(m.row_line[b], chorus::detail::concat(m.labels[b], "/", m.labels[a], " is ", ba->text(), " but ",
                                                                m.labels[a], "/", m.labels[b], " (line ", m.row_line[a],
                                                                ") is ", ab->text()));
      }
      if (!ab) m.cells[a][b] = ba;
      if (!ba) m.cells[b][a] = ab;
    }
  }
}

}  // namespace detail

CHORUS_FUNC NvsmiMatrix parse_nvsmi(std::string_view text) {
  const std::vector<std::string> lines = detail::nvsmi_lines(text);
  const std::size_t header = detail::nvsmi_header(lines);
  const int header_line = static_cast<int>(header) + 1;
  NvsmiMatrix m;
  const std::vector<detail::Extra> extras = detail::read_nvsmi_header(detail::split_words(lines[header]), header_line, m);
  const int d = static_cast<int>(m.labels.size());
  m.names = m.labels;
  m.cells.assign(d, std::vector<std::optional<SmiToken>>(d));
  m.row_line.assign(d, 0);
  m.cpu_affinity.assign(m.gpus, std::string());
  m.numa_affinity_list.assign(m.gpus, std::string());
  m.numa_affinity.assign(m.gpus, -1);
  m.gpu_numa_id.assign(m.gpus, -1);

  bool in_nic_legend = false;
  for (std::size_t i = header + 1; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    const auto words = detail::split_words(lines[i]);
    if (words.empty()) continue;
    if (words[0] == "NIC" && words.size() >= 2 && words[1] == "Legend:") {
      in_nic_legend = true;
      continue;
    }
    if (in_nic_legend && words.size() == 2 && words[0].size() > 1 && words[0].back() == ':') {
      // Only names that could head a column, and no name twice: the matrix must stay printable.
      const std::string label = words[0].substr(0, words[0].size() - 1);
      const bool taken = std::find(m.names.begin(), m.names.end(), words[1]) != m.names.end();
      for (int k = m.gpus; k < d; ++k) {
        if (m.labels[k] == label && !taken && is_nic_name(words[1])) m.names[k] = words[1];
      }
      continue;
    }
    int row = -1;
    for (int k = 0; k < d; ++k) {
      if (m.labels[k] == words[0]) row = k;
    }
    if (row < 0) continue;  // legend, notes, warnings: not ours
    if (m.row_line[row] != 0) {
      throw detail::nvsmi_error(line, chorus::detail::concat("second row for ", words[0], " (the first is on line ",
                                                             m.row_line[row], ")"));
    }
    m.row_line[row] = line;
    detail::read_nvsmi_cells(m, words, row, line);
    detail::read_nvsmi_extras(m, words, row, line, extras);
  }
  detail::check_every_gpu_row(m, header_line, lines);
  detail::symmetrise(m);
  return m;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
