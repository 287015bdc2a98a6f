#include <catch2/catch.hpp>

#include <chorus/topo/nccl_xml.hpp>
#include <chorus/topo/path.hpp>
#include <chorus/topo/sysfs_reader.hpp>
#include <chorus/topo/text_file.hpp>

#include <string>

#include "fake_sysfs.hpp"

namespace test_sysfs_reader {

using namespace chorus::topo;
using fixtures::FakeSysfs;

namespace {
// Two NUMA nodes; NUMA 0 has two host bridges. Bus ids are chosen so GPU order is easy to read.
void build_machine(const FakeSysfs& fs) {
  fs.numa(0, "0-15,32-47");
  fs.numa(1, "16-31,48-63");
  fs.cpuinfo("GenuineIntel", 6, 143);
  // Host bridge pci0000:00: root port -> switch (up 01:00.0, downs 02:0x.0) -> GPU, GPU, NIC.
  fs.bridge("pci0000:00/0000:00:01.0");
  fs.bridge("pci0000:00/0000:00:01.0/0000:01:00.0");
  fs.bridge("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0");
  fs.bridge("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0");
  fs.bridge("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0");
  fs.gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
  fs.gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0");
  fs.nic("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0", "mlx5_0");
  // A second root port of the same host bridge with a GPU on it directly (Gen3).
  fs.bridge("pci0000:00/0000:00:02.0");
  fs.gpu("pci0000:00/0000:00:02.0/0000:06:00.0", 0, "8.0 GT/s PCIe");
  // Things that are not ours: an Ethernet NIC without RDMA, the BMC's VGA, a host bridge function.
  fs.function("pci0000:00/0000:00:03.0", {{"class", "0x020000"}, {"vendor", "0x8086"}});
  fs.function("pci0000:00/0000:00:04.0", {{"class", "0x030000"}, {"vendor", "0x1a03"}});
  fs.function("pci0000:00/0000:00:00.0", {{"class", "0x060000"}, {"vendor", "0x8086"}});
  // Host bridge pci0000:40, same NUMA node: NODE from the GPUs above.
  fs.bridge("pci0000:40/0000:40:01.0");
  fs.gpu("pci0000:40/0000:40:01.0/0000:41:00.0");
  // Host bridge pci0000:80 on NUMA 1: two levels of switches.
  fs.bridge("pci0000:80/0000:80:01.0", "16.0 GT/s PCIe", 1);
  fs.bridge("pci0000:80/0000:80:01.0/0000:81:00.0", "16.0 GT/s PCIe", 1);
  fs.bridge("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0", "16.0 GT/s PCIe", 1);
  fs.bridge("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", "16.0 GT/s PCIe", 1);
  fs.bridge("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0/0000:84:00.0", "16.0 GT/s PCIe", 1);
  fs.gpu("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0/0000:84:00.0/0000:85:00.0", 1);
  fs.bridge("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0", "16.0 GT/s PCIe", 1);
  fs.gpu("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:86:00.0", 1);
}
}  // namespace

TEST_CASE("sysfs: GPUs, NICs, switches, host bridges and NUMA nodes", "[topo][sysfs]") {
  FakeSysfs fs;
  build_machine(fs);
  const Topology topo = read_sysfs(fs.root());
  REQUIRE(topo.gpu_count() == 6);
  REQUIRE(topo.nic_nodes().size() == 1);
  REQUIRE(topo.cpu_nodes().size() == 2);
  const std::vector<int> gpus = topo.gpu_nodes();
  const char* busids[] = {"0000:03:00.0", "0000:04:00.0", "0000:06:00.0", "0000:41:00.0", "0000:85:00.0",
                          "0000:86:00.0"};
  for (int d = 0; d < 6; ++d) CHECK(topo.nodes[gpus[d]].pci.busid == busids[d]);  // bus id order, like NVML
  const Node& cpu0 = topo.nodes[topo.cpu_nodes()[0]];
  CHECK(cpu0.cpu.numa == 0);
  CHECK(cpu0.cpu.affinity == "0000ffff,0000ffff");
  CHECK(cpu0.cpu.family() == CpuFamily::intel_sapphire_rapids);
  // Switches are their upstream ports: 01:00.0, 81:00.0 and 83:00.0.
  std::vector<std::string> switches;
  for (int s : topo.nodes_of(NodeKind::pci_switch)) switches.push_back(topo.nodes[s].pci.busid);
  std::sort(switches.begin(), switches.end());
  CHECK(switches == std::vector<std::string>{"0000:01:00.0", "0000:81:00.0", "0000:83:00.0"});
  const PathMatrix p(topo);
  CHECK(p.gpu(0, 1).token.text() == "PIX");
  CHECK(p.gpu(0, 2).token.text() == "PHB");
  CHECK(p.gpu(0, 3).token.text() == "NODE");
  CHECK(p.gpu(0, 4).token.text() == "SYS");
  CHECK(p.gpu(4, 5).token.text() == "PXB");
  CHECK(p.gpu_nic(0, 0).token.text() == "PIX");
  CHECK(p.gpu_nic(3, 0).token.text() == "NODE");
  CHECK(p.gpu(0, 1).bw_GBps == 24.0);
  CHECK(p.gpu(0, 2).bw_GBps == 12.0);  // GPU2's Gen3 link
  CHECK(p.gpu(0, 4).bw_GBps == 22.0);  // Sapphire Rapids' socket link
  const Node& nic = topo.nodes[topo.nic_nodes()[0]];
  CHECK(nic.name == "mlx5_0");
  REQUIRE(nic.nets.size() == 1);
  CHECK(nic.nets[0].speed_mbps == 200000);
  CHECK(topo.nodes[gpus[0]].pci.device == "0x20b0");
  // The topology survives NCCL XML, host bridges included.
  CHECK(same_machine(read_nccl_xml(write_nccl_xml(topo)), topo));
}

TEST_CASE("sysfs without GPUs still gives the CPU layout", "[topo][sysfs]") {
  FakeSysfs fs;
  fs.numa(0, "0-3");
  fs.numa(1, "4-7");
  fs.cpuinfo("AuthenticAMD", 25, 1);
  fs.function("pci0000:00/0000:00:03.0", {{"class", "0x020000"}, {"vendor", "0x8086"}});
  const Topology topo = read_sysfs(fs.root());
  CHECK(topo.gpu_count() == 0);
  REQUIRE(topo.cpu_nodes().size() == 2);
  CHECK(topo.nodes[topo.cpu_nodes()[1]].cpu.affinity == "000000f0");
  CHECK(topo.nodes[topo.cpu_nodes()[1]].cpu.family() == CpuFamily::amd);
}

TEST_CASE("sysfs without NUMA nodes, with numa_node -1 and with broken entries", "[topo][sysfs]") {
  FakeSysfs fs;
  fs.write("sys/devices/system/cpu/online", "0-7\n");
  fs.gpu("pci0000:00/0000:00:01.0/0000:01:00.0", -1);
  // A link to nowhere and a GPU whose class file is missing are skipped, not fatal.
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:09.0",
                                            std::filesystem::path(fs.root()) / "sys/bus/pci/devices/0000:00:09.0");
  fs.function("pci0000:00/0000:00:02.0", {{"vendor", "0x10de"}});
  const Topology topo = read_sysfs(fs.root());
  REQUIRE(topo.cpu_nodes().size() == 1);
  CHECK(topo.nodes[topo.cpu_nodes()[0]].cpu.affinity == "000000ff");
  CHECK(topo.gpu_count() == 1);
  CHECK(topo.cpu_of(topo.gpu_nodes()[0]) == topo.cpu_nodes()[0]);
}

TEST_CASE("a root without sysfs is an error", "[topo][sysfs]") {
  CHECK_THROWS_AS(read_sysfs("/nonexistent/chorus-root"), chorus::Error);
  FakeSysfs fs;
  std::filesystem::remove_all(std::filesystem::path(fs.root()) / "sys");
  CHECK_THROWS_AS(read_sysfs(fs.root()), chorus::Error);
}

TEST_CASE("this machine's sysfs reads without error", "[topo][sysfs]") {
  const Topology topo = read_sysfs();
  CHECK(topo.cpu_nodes().size() >= 1);
  validate(topo, "test");
}

namespace {
// read_sysfs's chorus::Error message, or what happened instead.
std::string sysfs_error(const std::string& root) {
  try {
    read_sysfs(root);
  } catch (const chorus::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a chorus::Error: ") + e.what();
  }
  return "no error";
}
}  // namespace

// Issue 7, item 11: a file that never ends (here /dev/zero) grew one string until allocation
// failed, and the failure was swallowed. Every sysfs read is capped like the other readers'.
TEST_CASE("sysfs files that never end are an error naming the file and the cap", "[topo][sysfs]") {
  namespace fs = std::filesystem;
  const std::string cap = std::to_string(kMaxTopologyFileBytes >> 20) + " MiB";
  SECTION("proc/cpuinfo") {
    FakeSysfs tree;
    build_machine(tree);
    const fs::path cpuinfo = fs::path(tree.root()) / "proc/cpuinfo";
    fs::remove(cpuinfo);
    fs::create_symlink("/dev/zero", cpuinfo);
    const std::string error = sysfs_error(tree.root());
    CHECK_THAT(error, Catch::Matchers::StartsWith("chorus::topo::read_sysfs: ") &&
                          Catch::Matchers::Contains("'" + cpuinfo.string() + "'") && Catch::Matchers::Contains(cap));
  }
  SECTION("a device attribute") {
    FakeSysfs tree;
    build_machine(tree);
    // Named as the reader reaches it: through the device's resolved directory.
    const fs::path device = fs::canonical(fs::path(tree.root()) / "sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0");
    fs::remove(device / "class");
    fs::create_symlink("/dev/zero", device / "class");
    const std::string error = sysfs_error(tree.root());
    CHECK_THAT(error, Catch::Matchers::StartsWith("chorus::topo::read_sysfs: ") &&
                          Catch::Matchers::Contains("'" + (device / "class").string() + "'") &&
                          Catch::Matchers::Contains(cap));
  }
}

}  // namespace test_sysfs_reader
