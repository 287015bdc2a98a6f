// Builds small fake sysfs trees in a temporary directory for the sysfs reader and chorus-topo:
// directories under sys/devices, attribute files, and sys/bus/pci/devices/<busid> as relative
// symlinks, the way the kernel lays them out.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

namespace fixtures {

class FakeSysfs {
 public:
  FakeSysfs() {
    std::string pattern = (std::filesystem::temp_directory_path() / "chorus-sysfs-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    std::filesystem::create_directories(root_ / "sys/bus/pci/devices");
    std::filesystem::create_directories(root_ / "sys/devices/system/node");
    std::filesystem::create_directories(root_ / "proc");
  }
  ~FakeSysfs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  std::string root() const { return root_.string(); }

  void write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path file = root_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  void numa(int node, const std::string& cpulist) const {
    write("sys/devices/system/node/node" + std::to_string(node) + "/cpulist", cpulist + "\n");
  }
  void cpuinfo(const std::string& vendor, int family, int model) const {
    write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: " + vendor + "\ncpu family\t: " + std::to_string(family) +
                              "\nmodel\t\t: " + std::to_string(model) + "\n\nprocessor\t: 1\n");
  }
  // A PCI function at `path` below sys/devices ("pci0000:00/0000:00:01.0/0000:01:00.0"), with its
  // attribute files and its sys/bus/pci/devices link.
  void function(const std::string& path, const std::map<std::string, std::string>& attributes) const {
    const std::filesystem::path dir = root_ / "sys/devices" / path;
    std::filesystem::create_directories(dir);
    for (const auto& [name, value] : attributes) write(("sys/devices/" + path + "/") + name, value + "\n");
    const std::string busid = dir.filename().string();
    std::error_code ec;
    std::filesystem::create_directory_symlink("../../../devices/" + path, root_ / "sys/bus/pci/devices" / busid, ec);
  }
  void bridge(const std::string& path, const std::string& speed = "16.0 GT/s PCIe", int numa = 0) const {
    function(path, {{"class", "0x060400"}, {"vendor", "0x1000"}, {"device", "0xc010"}, {"max_link_speed", speed},
                    {"max_link_width", "16"}, {"numa_node", std::to_string(numa)}});
  }
  void gpu(const std::string& path, int numa = 0, const std::string& speed = "16.0 GT/s PCIe") const {
    function(path, {{"class", "0x030200"}, {"vendor", "0x10de"}, {"device", "0x20b0"}, {"max_link_speed", speed},
                    {"max_link_width", "16"}, {"numa_node", std::to_string(numa)}});
  }
  void nic(const std::string& path, const std::string& name, int numa = 0) const {
    function(path, {{"class", "0x020700"},
                    {"vendor", "0x15b3"},
                    {"device", "0x101b"},
                    {"max_link_speed", "16.0 GT/s PCIe"},
                    {"max_link_width", "16"},
                    {"numa_node", std::to_string(numa)}});
    write("sys/devices/" + path + "/infiniband/" + name + "/ports/1/rate", "200 Gb/sec (4X HDR)");
  }

 private:
  std::filesystem::path root_;
};

}  // namespace fixtures
