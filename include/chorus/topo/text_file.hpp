// Reads a whole (small) text file for the readers, with an error that names the reader and path.
#pragma once

#include <fstream>
#include <string>

#include "topology.hpp"

namespace chorus::topo {

// Topology files are kilobytes; anything past this is not one, and reading it would only hurt.
constexpr std::size_t kMaxTopologyFileBytes = std::size_t{64} << 20;

inline std::string read_text_file(const std::string& path, const char* call) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw detail::topo_error(call, "cannot open '", path, "'");
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTopologyFileBytes) {
      throw detail::topo_error(call, "'", path, "' is larger than ", kMaxTopologyFileBytes >> 20, " MiB");
    }
  }
  if (in.bad()) throw detail::topo_error(call, "cannot read '", path, "'");
  return text;
}

}  // namespace chorus::topo
