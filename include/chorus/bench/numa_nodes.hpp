// Which NUMA node each CPU belongs to, read from sysfs (/sys/devices/system/node/node<N>/cpulist) so
// chorus-p2p needs no libnuma. A machine (or container) without that folder has no known nodes: the
// map is empty and callers print the node as unknown rather than guess 0.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "cpu_list.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

constexpr const char* kSysfsNodeDir = "/sys/devices/system/node";

// CPU -> NUMA node for every CPU some node lists. Entries other than node<digits> (has_cpu, online,
// power, ...) are skipped; an unreadable or malformed cpulist, or a CPU two nodes both claim, is a
// chorus::Error naming the file.
inline std::map<int, int> numa_node_of_cpus(const std::string& node_dir = kSysfsNodeDir) {
  namespace fs = std::filesystem;
  std::map<int, int> node_of;
  std::error_code missing;
  if (!fs::is_directory(node_dir, missing)) return node_of;
  for (const auto& entry : fs::directory_iterator(node_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 4 || name.compare(0, 4, "node") != 0 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos || name.size() > 9) {
      continue;
    }
    const int node = std::stoi(name.substr(4));
    const fs::path list_path = entry.path() / "cpulist";
    std::ifstream file(list_path);
    if (!file) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::bench::numa_node_of_cpus: cannot read ", list_path.string()));
    }
    const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    try {
      for (int cpu : parse_cpu_list(text)) {
        const auto [it, inserted] = node_of.emplace(cpu, node);
        if (!inserted) {
          throw Error(ErrorCode::invalid_argument,
                      chorus::detail::concat("CPU ", cpu, " is listed by both node", it->second, " and node", node));
        }
      }
    } catch (const Error& e) {
      throw Error(e.code(), chorus::detail::concat("chorus::bench::numa_node_of_cpus: ", list_path.string(), ": ",
                                                   e.what()));
    }
  }
  return node_of;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
