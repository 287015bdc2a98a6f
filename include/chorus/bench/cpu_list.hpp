// The Linux "cpulist" text ("0-3,8,10-11"): what sysfs writes in /sys/devices/system/node/node*/cpulist
// and what chorus-p2p's --cpus reads. parse_cpu_list returns the CPUs sorted, each once; format_cpu_list
// writes them back with ranges. One trailing newline is accepted (sysfs files end in one) and an empty
// list is valid (a memory-only NUMA node has no CPUs); everything else that is not a number or a
// rising range (spaces, signs, "3-1", "1,,2", the kernel's "0-7:2/4" stride form) is a chorus::Error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

// Far above any machine's CPU count (Linux's NR_CPUS is at most 8192) and small enough that a typo
// such as "0-99999999" is refused instead of allocating a list of a hundred million CPUs.
constexpr int kMaxCpu = 65535;

namespace detail {
inline Error cpu_list_error(std::string_view text, const std::string& why) {
  return Error(ErrorCode::invalid_argument,
               chorus::detail::concat("chorus::bench::parse_cpu_list: \"", text, "\" ", why,
                                      " (expected CPU numbers and rising ranges separated by commas, e.g. 0-3,8,10-11)"));
}

// Reads the number at text[pos...], advancing pos; throws unless there is one within [0, kMaxCpu].
inline int read_cpu(std::string_view all, std::string_view text, std::size_t& pos) {
  const std::size_t start = pos;
  long value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    value = value * 10 + (text[pos] - '0');
    if (value > kMaxCpu) throw cpu_list_error(all, chorus::detail::concat("names a CPU above ", kMaxCpu));
    ++pos;
  }
  if (pos == start) {
    const std::string what = pos < text.size() ? chorus::detail::concat("has '", text[pos], "' at position ", pos)
                                               : chorus::detail::concat("ends where a CPU number should be");
    throw cpu_list_error(all, what);
  }
  return static_cast<int>(value);
}
}  // namespace detail

inline std::vector<int> parse_cpu_list(std::string_view all) {
  std::string_view text = all;
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  std::vector<int> cpus;
  if (text.empty()) return cpus;
  std::size_t pos = 0;
  for (;;) {
    const int first = detail::read_cpu(all, text, pos);
    int last = first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      last = detail::read_cpu(all, text, pos);
      if (last < first) {
        throw detail::cpu_list_error(all, chorus::detail::concat("has the falling range ", first, "-", last));
      }
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    if (pos == text.size()) break;
    if (text[pos] != ',') {
      throw detail::cpu_list_error(all, chorus::detail::concat("has '", text[pos], "' at position ", pos));
    }
    ++pos;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

// {0,1,2,3,8,10,11} -> "0-3,8,10-11"; expects what parse_cpu_list returns (sorted, each once).
inline std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
