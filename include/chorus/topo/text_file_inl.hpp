// text_file.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by text_file.hpp; not for direct use.
#pragma once

#include <fstream>
#include <optional>
#include <string>

#include "../core/config.hpp"
#include "text_file.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
// Reads `in` to its end, throwing (naming the file and the cap) once it passes the cap.
CHORUS_FUNC std::string read_capped(std::ifstream& in, const std::string& path, const char* call) {
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

CHORUS_FUNC std::string read_text_file(const std::string& path, const char* call) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw detail::topo_error(call, "cannot open '", path, "'");
  std::string text = detail::read_capped(in, path, call);
  if (in.bad()) throw detail::topo_error(call, "cannot read '", path, "'");
  return text;
}

CHORUS_FUNC std::optional<std::string> read_text_file_if_readable(const std::string& path, const char* call) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text = detail::read_capped(in, path, call);
  if (in.bad()) return std::nullopt;
  return text;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
