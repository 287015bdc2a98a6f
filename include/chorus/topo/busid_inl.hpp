// busid.hpp's bodies: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by busid.hpp; not for direct use.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "../core/config.hpp"
#include "busid.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

CHORUS_FUNC std::optional<std::string> normalize_busid(std::string_view text) {
  const auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon < 1 || colon > 8) return std::nullopt;
  const std::string_view domain = text.substr(0, colon);
  const std::string_view rest = text.substr(colon + 1);
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return std::nullopt;
  for (std::size_t i : {0u, 1u, 3u, 4u, 6u}) {
    if (!hex(rest[i])) return std::nullopt;
  }
  if (rest[6] > '7') return std::nullopt;  // functions are 0..7
  unsigned long value = 0;
  for (char c : domain) {
    if (!hex(c)) return std::nullopt;
    value = value * 16 + static_cast<unsigned long>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, value <= 0xffff ? "%04lx:" : "%08lx:", value);
  std::string out = buffer;
  for (char c : rest) out += (c >= 'A' && c <= 'F') ? static_cast<char>(c | 0x20) : c;
  return out;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
