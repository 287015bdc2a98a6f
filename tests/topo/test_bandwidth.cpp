#include <catch2/catch.hpp>

#include <chorus/topo/bandwidth.hpp>

namespace test_bandwidth {

using namespace chorus::topo;

TEST_CASE("NVLink per-link figures follow NCCL's table by GPU generation", "[topo][bandwidth]") {
  CHECK(nvlink_link_GBps(60) == 18.0);
  CHECK(nvlink_link_GBps(70) == 20.0);
  CHECK(nvlink_link_GBps(80) == 20.0);
  CHECK(nvlink_link_GBps(86) == 12.0);
  CHECK(nvlink_link_GBps(90) == Approx(20.6));
  CHECK(nvlink_link_GBps(100) == Approx(40.1));
  CHECK(nvlink_link_GBps(0) == 20.0);  // unknown: the V100/A100 figure
  // The published aggregates (nccl-tests#256): A100 12 links, H100 18 links.
  CHECK(12 * nvlink_link_GBps(80) == Approx(240.0));
  CHECK(18 * nvlink_link_GBps(90) == Approx(370.8));
}

TEST_CASE("PCIe is width x lane / 80", "[topo][bandwidth]") {
  CHECK(pcie_GBps(8.0, 16) == 12.0);
  CHECK(pcie_GBps(16.0, 16) == 24.0);
  CHECK(pcie_GBps(32.0, 16) == 48.0);
  CHECK(pcie_GBps(64.0, 16) == 96.0);
  CHECK(pcie_GBps(8.0, 8) == 6.0);
  CHECK(pcie_GBps(2.5, 16) == 3.0);
  CHECK(pcie_GBps(5.0, 1) == Approx(0.375));
  CHECK(pcie_GBps(16.0, 0) == 0.0);   // unknown width
  CHECK(pcie_GBps(0.0, 16) == 0.0);   // unknown speed
  CHECK(pcie_GBps(1.0, 16) == 0.0);   // not a PCIe rate
  for (int gen = 1; gen <= 6; ++gen) CHECK(pcie_gen_gts(gen) > 0);
  CHECK(pcie_gen_gts(0) == 0.0);
  CHECK(pcie_gen_gts(7) == 0.0);
}

TEST_CASE("socket links are priced by CPU family", "[topo][bandwidth]") {
  CHECK(inter_cpu_GBps(CpuFamily::intel_broadwell) == 6.0);
  CHECK(inter_cpu_GBps(CpuFamily::intel_skylake) == 10.0);
  CHECK(inter_cpu_GBps(CpuFamily::intel_sapphire_rapids) == 22.0);
  CHECK(inter_cpu_GBps(CpuFamily::intel_emerald_rapids) == 40.0);
  CHECK(inter_cpu_GBps(CpuFamily::amd) == 16.0);
  CHECK(inter_cpu_GBps(CpuFamily::power9) == 32.0);
  CHECK(inter_cpu_GBps(CpuFamily::arm) == 6.0);
  CHECK(inter_cpu_GBps(CpuFamily::unknown) == 6.0);
}

TEST_CASE("CPUs are classified from vendor, family and model", "[topo][bandwidth]") {
  CHECK(classify_cpu("x86_64", "GenuineIntel", 6, 79) == CpuFamily::intel_broadwell);  // E5-2698 v4
  CHECK(classify_cpu("x86_64", "GenuineIntel", 6, 0x54) == CpuFamily::intel_broadwell);
  CHECK(classify_cpu("x86_64", "GenuineIntel", 6, 0x55) == CpuFamily::intel_skylake);
  CHECK(classify_cpu("x86_64", "GenuineIntel", 6, 106) == CpuFamily::intel_skylake);  // Ice Lake-SP
  CHECK(classify_cpu("x86_64", "GenuineIntel", 6, 0x8F) == CpuFamily::intel_sapphire_rapids);
  CHECK(classify_cpu("x86_64", "GenuineIntel", 6, 0xCF) == CpuFamily::intel_emerald_rapids);
  CHECK(classify_cpu("x86_64", "AuthenticAMD", 23, 49) == CpuFamily::amd);
  CHECK(classify_cpu("ppc64", "", 0, 0) == CpuFamily::power9);
  CHECK(classify_cpu("arm64", "", 0, 0) == CpuFamily::arm);
  CHECK(classify_cpu("aarch64", "", 0, 0) == CpuFamily::arm);
  CHECK(classify_cpu("x86_64", "", 0, 0) == CpuFamily::unknown);
  CHECK(classify_cpu(nullptr, nullptr, 0, 0) == CpuFamily::unknown);
}

TEST_CASE("typical generations and channel caps", "[topo][bandwidth]") {
  CHECK(typical_pcie_generation(70) == 3);
  CHECK(typical_pcie_generation(80) == 4);
  CHECK(typical_pcie_generation(90) == 5);
  CHECK(typical_pcie_generation(0) == 3);
  CHECK(max_channel_GBps(80) == 40.0);
  CHECK(max_channel_GBps(90) == 60.0);
  CHECK(max_channel_GBps(100) == 90.0);
}

}  // namespace test_bandwidth
