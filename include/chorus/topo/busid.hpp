// PCI bus ids ("0000:07:00.0"): the key every source uses to name a device.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace chorus::topo {

// Normalises a bus id to NCCL's form "dddd:bb:dd.f" in lower case. NVML prints an 8-digit domain
// ("00000000:07:00.0"); that is accepted and shortened when it fits. nullopt if it is not a bus id.
inline std::optional<std::string> normalize_busid(std::string_view text) {
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

}  // namespace chorus::topo
