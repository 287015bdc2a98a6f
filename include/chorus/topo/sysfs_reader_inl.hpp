// sysfs_reader.hpp's bodies: compiled in every translation unit in header-only mode, once in
// libchorus in compiled mode (core/config.hpp). Included by sysfs_reader.hpp; not for direct use.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "sysfs_reader.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
namespace fs = std::filesystem;

// The first line of a small attribute file, without the newline; nullopt if unreadable. Read
// whole under the readers' cap: a fake or damaged tree may link an attribute to /dev/zero.
CHORUS_FUNC std::optional<std::string> sysfs_line(const fs::path& file) {
  auto text = read_text_file_if_readable(file.string(), "read_sysfs");
  if (!text) return std::nullopt;
  std::string line = text->substr(0, text->find('\n'));
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

CHORUS_FUNC int sysfs_int(const fs::path& file, int fallback) {
  const auto line = sysfs_line(file);
  if (!line || line->empty()) return fallback;
  try {
    std::size_t used = 0;
    const long value = std::stol(*line, &used, 0);
    return used == line->size() ? static_cast<int>(value) : fallback;
  } catch (...) {
    return fallback;
  }
}

// "8.0 GT/s PCIe", "16 GT/s", "Unknown" -> GT/s (0 when unknown).
CHORUS_FUNC double sysfs_link_speed(const fs::path& device) {
  for (const char* name : {"max_link_speed", "current_link_speed"}) {
    const auto line = sysfs_line(device / name);
    if (!line) continue;
    try {
      std::size_t used = 0;
      const double gts = std::stod(*line, &used);
      if (used > 0 && line->find("GT/s") != std::string::npos) return gts;
    } catch (...) {
    }
  }
  return 0.0;
}

CHORUS_FUNC int sysfs_link_width(const fs::path& device) {
  for (const char* name : {"max_link_width", "current_link_width"}) {
    const int width = sysfs_int(device / name, -1);
    if (width > 0 && width <= 64) return width;
  }
  return 0;
}

CHORUS_FUNC PciInfo sysfs_pci(const fs::path& device, const std::string& busid) {
  PciInfo pci;
  pci.busid = busid;
  pci.class_code = sysfs_line(device / "class").value_or("");
  pci.vendor = sysfs_line(device / "vendor").value_or("");
  pci.device = sysfs_line(device / "device").value_or("");
  pci.subsystem_vendor = sysfs_line(device / "subsystem_vendor").value_or("");
  pci.subsystem_device = sysfs_line(device / "subsystem_device").value_or("");
  pci.link_gts = sysfs_link_speed(device);
  pci.link_width = sysfs_link_width(device);
  return pci;
}

CHORUS_FUNC std::vector<std::string> sorted_entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// CPU identity from /proc/cpuinfo (first processor's entry).
CHORUS_FUNC CpuInfo sysfs_cpu_identity(const fs::path& root) {
  CpuInfo cpu;
  std::istringstream in(read_text_file_if_readable((root / "proc" / "cpuinfo").string(), "read_sysfs").value_or(""));
  std::string line;
  bool arm = false, power = false;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) {
      if (!cpu.vendor.empty() || arm || power) break;  // end of the first processor's block
      continue;
    }
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
    try {
      if (key == "vendor_id") cpu.vendor = value;
      if (key == "cpu family") cpu.family_id = std::stoi(value);
      if (key == "model") cpu.model_id = std::stoi(value);
    } catch (...) {
    }
    if (key == "CPU implementer") arm = true;
    if (key == "cpu" && value.find("POWER") != std::string::npos) power = true;
  }
  if (!cpu.vendor.empty()) cpu.arch = "x86_64";
  else if (arm) cpu.arch = "arm64";
  else if (power) cpu.arch = "ppc64";
  return cpu;
}

CHORUS_FUNC bool is_gpu_class(const PciInfo& pci) {
  const auto starts = [](const std::string& s, const char* p) { return s.rfind(p, 0) == 0; };
  return starts(pci.vendor, "0x10de") && (starts(pci.class_code, "0x0302") || starts(pci.class_code, "0x0300"));
}
}  // namespace detail

CHORUS_FUNC Topology read_sysfs(const std::string& root) {
  namespace fs = std::filesystem;
  const fs::path base = root.empty() ? fs::path("/") : fs::path(root);
  std::error_code ec;
  if (!fs::is_directory(base / "sys", ec)) throw detail::topo_error("read_sysfs", "no sysfs under '", root, "'");
  Topology topo;
  topo.source = base == fs::path("/") ? "sysfs" : "sysfs (" + root + ")";

  // NUMA nodes.
  const CpuInfo identity = detail::sysfs_cpu_identity(base);
  std::map<int, int> cpu_of_numa;
  std::vector<std::pair<int, std::string>> numa_nodes;
  for (const std::string& name : detail::sorted_entries(base / "sys/devices/system/node")) {
    if (name.size() < 5 || name.compare(0, 4, "node") != 0) continue;
    if (name.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    const auto cpus = detail::sysfs_line(base / "sys/devices/system/node" / name / "cpulist");
    if (name.size() > 9) continue;  // no machine has a billion NUMA nodes
    numa_nodes.emplace_back(std::atoi(name.c_str() + 4), cpus.value_or(""));
  }
  if (numa_nodes.empty())
    numa_nodes.emplace_back(0, detail::sysfs_line(base / "sys/devices/system/cpu/online").value_or(""));
  std::sort(numa_nodes.begin(), numa_nodes.end());
  for (const auto& [numa, cpulist] : numa_nodes) {
    CpuInfo cpu = identity;
    cpu.numa = numa;
    if (const auto cpus = parse_cpulist(cpulist)) cpu.affinity = to_cpumask(*cpus);
    cpu_of_numa[numa] = topo.add_cpu(cpu);
  }

  // Devices.
  const fs::path devices_dir = base / "sys/bus/pci/devices";
  const fs::path real_devices = fs::weakly_canonical(base / "sys/devices", ec);
  std::map<std::string, int> switch_node;             // upstream port busid -> node
  std::map<int, std::vector<std::string>> bridges_of;  // cpu node -> host bridge names seen
  struct Found {
    std::string busid;
    fs::path dir;
    std::vector<std::string> chain;  // path components below sys/devices
  };
  std::vector<Found> gpus, nics;
  for (const std::string& entry : detail::sorted_entries(devices_dir)) {
    const auto busid = normalize_busid(entry);
    if (!busid) continue;
    const fs::path dir = fs::canonical(devices_dir / entry, ec);
    if (ec) continue;
    const PciInfo pci = detail::sysfs_pci(dir, *busid);
    const bool gpu = detail::is_gpu_class(pci);
    const bool nic = pci.class_code.rfind("0x0207", 0) == 0 ||
                     (pci.class_code.rfind("0x02", 0) == 0 && fs::is_directory(dir / "infiniband", ec));
    if (!gpu && !nic) continue;
    // The components between sys/devices and the device: pciDDDD:BB, bridges..., the device.
    const fs::path relative = dir.lexically_relative(real_devices);
    std::vector<std::string> chain;
    for (const auto& part : relative) chain.push_back(part.string());
    if (chain.size() < 2 || chain.front().compare(0, 3, "pci") != 0 || chain.front() == "..") continue;
    (gpu ? gpus : nics).push_back(Found{*busid, dir, chain});
  }
  // Host bridges get indices per NUMA node in name order, so NODE vs PHB is stable.
  const auto numa_of = [&](const Found& found) {
    // The NUMA node of the first function under the host bridge (root port or device).
    const fs::path first = real_devices / found.chain[0] / found.chain[1];
    int numa = detail::sysfs_int(first / "numa_node", -1);
    if (numa < 0) numa = detail::sysfs_int(found.dir / "numa_node", -1);
    return cpu_of_numa.count(numa) != 0 ? numa : numa_nodes.front().first;
  };
  for (const auto* list : {&gpus, &nics}) {
    for (const Found& found : *list) {
      auto& seen = bridges_of[cpu_of_numa[numa_of(found)]];
      if (std::find(seen.begin(), seen.end(), found.chain[0]) == seen.end()) seen.push_back(found.chain[0]);
    }
  }
  for (auto& [cpu, seen] : bridges_of) std::sort(seen.begin(), seen.end());
  const auto attach = [&](const Found& found) {
    const int cpu = cpu_of_numa[numa_of(found)];
    const auto& seen = bridges_of[cpu];
    const int host_bridge =
        static_cast<int>(std::find(seen.begin(), seen.end(), found.chain[0]) - seen.begin());
    // Bridges strictly between the host bridge and the device; skip the root port, keep every
    // switch's upstream port (even positions), skip its downstream ports.
    std::vector<std::string> bridges(found.chain.begin() + 1, found.chain.end() - 1);
    int parent = cpu;
    fs::path at = real_devices / found.chain[0];
    for (std::size_t k = 0; k < bridges.size(); ++k) {
      at /= bridges[k];
      if (k == 0 || (k - 1) % 2 != 0) continue;
      const auto busid = normalize_busid(bridges[k]);
      if (!busid) continue;
      auto it = switch_node.find(*busid);
      if (it == switch_node.end()) {
        it = switch_node.emplace(*busid, topo.add_pci_switch(parent, detail::sysfs_pci(at, *busid), host_bridge)).first;
      }
      parent = it->second;
    }
    return std::make_pair(parent, host_bridge);
  };
  // GPUs are numbered in bus id order, as NVML and nvidia-smi do.
  int dev = 0;
  for (const Found& found : gpus) {
    const auto [parent, host_bridge] = attach(found);
    topo.add_gpu(parent, detail::sysfs_pci(found.dir, found.busid), dev++, 0, host_bridge);
  }
  int net_dev = 0;  // network devices numbered across NICs, in bus id order
  for (const Found& found : nics) {
    const auto [parent, host_bridge] = attach(found);
    std::vector<NetPort> nets;
    for (const std::string& name : detail::sorted_entries(found.dir / "infiniband")) {
      for (const std::string& port : detail::sorted_entries(found.dir / "infiniband" / name / "ports")) {
        NetPort net;
        net.name = name;
        net.dev = net_dev++;
        net.port = std::atoi(port.c_str());
        // "100 Gb/sec (4X EDR)"
        const auto rate = detail::sysfs_line(found.dir / "infiniband" / name / "ports" / port / "rate");
        if (rate) net.speed_mbps = std::atoi(rate->c_str()) * 1000;
        nets.push_back(net);
      }
    }
    if (nets.empty()) {
      for (const std::string& name : detail::sorted_entries(found.dir / "net")) {
        NetPort net;
        net.name = name;
        net.dev = net_dev++;
        net.speed_mbps = std::max(0, detail::sysfs_int(found.dir / "net" / name / "speed", 0));
        nets.push_back(net);
      }
    }
    topo.add_nic(parent, detail::sysfs_pci(found.dir, found.busid), nets, host_bridge);
  }
  validate(topo, "read_sysfs");
  return topo;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
