#include <catch2/catch.hpp>

#include <chorus/topo/nvml_reader.hpp>
#include <chorus/topo/path.hpp>

#include <string>

namespace test_nvml_reader {

using namespace chorus::topo;

TEST_CASE("a missing NVML library is 'not available', not an error", "[topo][nvml]") {
  const NvmlInfo info = read_nvml("libchorus-no-such-nvml.so.1");
  CHECK_FALSE(info.available);
  CHECK(info.reason.find("libchorus-no-such-nvml.so.1") != std::string::npos);
  CHECK(info.gpus.empty());
}

TEST_CASE("a library without NVML's symbols is 'not available' too", "[topo][nvml]") {
  const NvmlInfo info = read_nvml("libc.so.6");
  CHECK_FALSE(info.available);
  CHECK(info.reason.find("has no nvmlInit_v2") != std::string::npos);
}

TEST_CASE("the default library: either GPUs or a reason", "[topo][nvml]") {
  const NvmlInfo info = read_nvml();
  CHECK((info.available || !info.reason.empty()));
  for (const NvmlGpu& gpu : info.gpus) CHECK(normalize_busid(gpu.busid));
}

namespace {
Topology four_gpus() {
  Topology t;
  CpuInfo cpu;
  cpu.arch = "x86_64";
  const int c = t.add_cpu(cpu);
  for (int d = 0; d < 4; ++d) {
    PciInfo pci;
    pci.busid = "0000:0" + std::to_string(d + 1) + ":00.0";
    t.add_gpu(c, pci, d, 0);
  }
  return t;
}
}  // namespace

TEST_CASE("NVML's links merge into a sysfs topology", "[topo][nvml]") {
  NvmlInfo info;
  info.available = true;
  // GPU 0 and 1: 4 links, seen from both ends. GPUs 2 and 3: 6 links each to two NVSwitches.
  info.gpus.push_back({0, "0000:01:00.0", "A", 80, {{"0000:02:00.0", 4}}});
  info.gpus.push_back({1, "0000:02:00.0", "A", 80, {{"0000:01:00.0", 4}}});
  info.gpus.push_back({2, "0000:03:00.0", "A", 80, {{"0000:c4:00.0", 3}, {"0000:c5:00.0", 3}}});
  info.gpus.push_back({3, "0000:04:00.0", "A", 80, {{"0000:c4:00.0", 3}, {"0000:c5:00.0", 3}}});
  info.gpus.push_back({4, "0000:99:00.0", "not in sysfs", 90, {{"0000:01:00.0", 2}}});
  Topology t = four_gpus();
  apply_nvml(t, info);
  validate(t, "test");
  for (int gpu : t.gpu_nodes()) CHECK(t.nodes[gpu].sm == 80);
  REQUIRE(t.nodes_of(NodeKind::nvswitch).size() == 1);
  CHECK(t.nodes[t.nodes_of(NodeKind::nvswitch)[0]].pci.busid == "0000:c4:00.0");
  const PathMatrix p(t);
  CHECK(p.gpu(0, 1).token.text() == "NV4");
  CHECK(p.gpu(2, 3).token.text() == "NV6");
  CHECK(p.gpu(0, 2).token.text() == "PHB");

  Topology untouched = four_gpus();
  NvmlInfo absent;
  apply_nvml(untouched, absent);
  CHECK(untouched.nvlinks.empty());
}

}  // namespace test_nvml_reader
