// cpuset.hpp's bodies: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by cpuset.hpp; not for direct use.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "cpuset.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

CHORUS_FUNC std::optional<std::vector<bool>> parse_cpulist(std::string_view text) {
  std::vector<bool> cpus;
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
  };
  const auto number = [&]() -> std::optional<int> {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
    long value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      value = value * 10 + (text[i++] - '0');
      if (value > kMaxCpuId) return std::nullopt;
    }
    return static_cast<int>(value);
  };
  skip_space();
  if (i == text.size()) return cpus;  // empty list
  for (;;) {
    skip_space();
    const auto first = number();
    if (!first) return std::nullopt;
    int last = *first;
    if (i < text.size() && text[i] == '-') {
      ++i;
      const auto end = number();
      if (!end || *end < *first) return std::nullopt;
      last = *end;
    }
    if (static_cast<int>(cpus.size()) <= last) cpus.resize(static_cast<std::size_t>(last) + 1, false);
    for (int c = *first; c <= last; ++c) cpus[static_cast<std::size_t>(c)] = true;
    skip_space();
    if (i == text.size()) return cpus;
    if (text[i] != ',') return std::nullopt;
    ++i;
  }
}

CHORUS_FUNC std::optional<std::vector<bool>> parse_cpumask(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::vector<int> nibbles;  // least significant first
  for (std::size_t i = text.size(); i-- > 0;) {
    const char c = text[i];
    if (c == ',') continue;
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0) return std::nullopt;
    if (nibbles.size() * 4 > static_cast<std::size_t>(kMaxCpuId)) return std::nullopt;
    nibbles.push_back(v);
  }
  if (nibbles.empty()) return std::nullopt;
  std::vector<bool> cpus(nibbles.size() * 4, false);
  for (std::size_t n = 0; n < nibbles.size(); ++n) {
    for (int b = 0; b < 4; ++b) cpus[n * 4 + b] = ((nibbles[n] >> b) & 1) != 0;
  }
  while (!cpus.empty() && !cpus.back()) cpus.pop_back();
  return cpus;
}

CHORUS_FUNC std::string to_cpumask(const std::vector<bool>& cpus) {
  const std::size_t words = cpus.empty() ? 1 : (cpus.size() + 31) / 32;
  std::string out;
  static const char kHex[] = "0123456789abcdef";
  for (std::size_t w = words; w-- > 0;) {
    for (int nibble = 7; nibble >= 0; --nibble) {
      int v = 0;
      for (int b = 0; b < 4; ++b) {
        const std::size_t cpu = w * 32 + static_cast<std::size_t>(nibble) * 4 + b;
        if (cpu < cpus.size() && cpus[cpu]) v |= 1 << b;
      }
      out += kHex[v];
    }
    if (w != 0) out += ',';
  }
  return out;
}

CHORUS_FUNC std::string to_cpulist(const std::vector<bool>& cpus) {
  std::string out;
  for (std::size_t c = 0; c < cpus.size();) {
    if (!cpus[c]) {
      ++c;
      continue;
    }
    std::size_t end = c;
    while (end + 1 < cpus.size() && cpus[end + 1]) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (end != c) out += "-" + std::to_string(end);
    c = end + 1;
  }
  return out;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
