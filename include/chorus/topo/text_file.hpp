// Reads a whole (small) text file for the readers, with an error that names the reader and path.
// Every reader's file reads go through here, so one cap protects them all.
#pragma once

#include <fstream>
#include <optional>
#include <string>

#include "topology.hpp"

namespace chorus::topo {

// Topology files are kilobytes; anything past this is not one, and reading it would only hurt
// (a sysfs or /proc entry that links to /dev/zero never ends: uncapped, it grows one string until
// allocation fails).
constexpr std::size_t kMaxTopologyFileBytes = std::size_t{64} << 20;

namespace detail {
// Reads `in` to its end, throwing (naming the file and the cap) once it passes the cap.
inline std::string read_capped(std::ifstream& in, const std::string& path, const char* call) {
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTopologyFileBytes) {
      throw topo_error(call, "'", path, "' is larger than ", kMaxTopologyFileBytes >> 20, " MiB");
    }
  }
  return text;
}
}  // namespace detail

inline std::string read_text_file(const std::string& path, const char* call) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw detail::topo_error(call, "cannot open '", path, "'");
  std::string text = detail::read_capped(in, path, call);
  if (in.bad()) throw detail::topo_error(call, "cannot read '", path, "'");
  return text;
}

// The same, but nullopt when the file cannot be opened or read (sysfs skips such entries, as
// NCCL does). A file past the cap still throws: that is never one to skip quietly.
inline std::optional<std::string> read_text_file_if_readable(const std::string& path, const char* call) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text = detail::read_capped(in, path, call);
  if (in.bad()) return std::nullopt;
  return text;
}

}  // namespace chorus::topo
