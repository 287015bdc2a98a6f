#include <catch2/catch.hpp>

#include <chorus/topo/path.hpp>

#include <string>

namespace test_paths {

using namespace chorus::topo;

namespace {
PciInfo pci(const std::string& busid, double gts = 16.0, int width = 16) {
  PciInfo info;
  info.busid = busid;
  info.link_gts = gts;
  info.link_width = width;
  return info;
}

CpuInfo cpu(int numa, CpuFamily family = CpuFamily::amd) {
  CpuInfo info;
  info.numa = numa;
  info.arch = "x86_64";
  info.vendor = family == CpuFamily::amd ? "AuthenticAMD" : "GenuineIntel";
  info.family_id = family == CpuFamily::amd ? 23 : 6;
  info.model_id = family == CpuFamily::amd ? 49 : 85;
  return info;
}
}  // namespace

TEST_CASE("PCIe classes follow the tree: PIX, PXB, PHB, NODE, SYS", "[topo][paths]") {
  Topology t;
  const int c0 = t.add_cpu(cpu(0));
  const int c1 = t.add_cpu(cpu(1));
  const int top = t.add_pci_switch(c0, pci("0000:01:00.0"));
  const int left = t.add_pci_switch(top, pci("0000:02:00.0"));
  const int right = t.add_pci_switch(top, pci("0000:03:00.0", 16.0, 8));
  const int g0 = t.add_gpu(left, pci("0000:04:00.0"), 0, 80);
  const int g1 = t.add_gpu(left, pci("0000:05:00.0"), 1, 80);
  const int g2 = t.add_gpu(right, pci("0000:06:00.0"), 2, 80);
  const int g3 = t.add_gpu(c0, pci("0000:07:00.0"), 3, 80, 0);  // same host bridge as the top switch
  const int g4 = t.add_gpu(c0, pci("0000:08:00.0"), 4, 80, 1);  // another host bridge
  const int g5 = t.add_gpu(c1, pci("0000:09:00.0", 8.0), 5, 80);
  const int nic = t.add_nic(left, pci("0000:0a:00.0"), {NetPort{"mlx5_0", 0, 200000, 1, "0x1", true}});
  validate(t, "test");
  const PathMatrix p(t);
  REQUIRE(p.gpu_count() == 6);
  REQUIRE(p.nic_count() == 1);
  CHECK(p.gpu(0, 1).token.text() == "PIX");
  CHECK(p.gpu(0, 1).type == PathType::pix);
  CHECK(p.gpu(0, 1).route == std::vector<int>{g0, left, g1});
  CHECK(p.gpu(0, 2).token.text() == "PXB");
  CHECK(p.gpu(0, 2).type == PathType::pxb);
  CHECK(p.gpu(0, 2).bw_GBps == 12.0);  // the x8 uplink of the right switch
  CHECK(p.gpu(0, 3).token.text() == "PHB");
  CHECK(p.gpu(0, 3).type == PathType::phb);
  CHECK(p.gpu(3, 4).token.text() == "NODE");
  CHECK(p.gpu(3, 4).type == PathType::phb);
  CHECK(p.gpu(0, 5).token.text() == "SYS");
  CHECK(p.gpu(0, 5).type == PathType::sys);
  CHECK(p.gpu(0, 5).bw_GBps == 12.0);  // Gen3 x16 on GPU5; AMD's socket link is 16
  CHECK(p.gpu(3, 5).latency_us == Approx(2 * kPcieLatencyUs + kInterCpuLatencyUs));  // GPU, CPU, CPU, GPU
  CHECK(p.gpu_nic(0, 0).token.text() == "PIX");
  CHECK(p.gpu_nic(2, 0).token.text() == "PXB");
  CHECK(p.gpu_nic(5, 0).token.text() == "SYS");
  CHECK(p.gpu_nic(0, 0).bw_GBps == 24.0);  // the PCIe path, not the 25 GB/s port
  for (int a = 0; a < p.device_count(); ++a) {
    CHECK(p.device(a, a).type == PathType::loc);
    CHECK(p.device(a, a).token.text() == "X");
    CHECK(p.device(a, a).bw_GBps == kLocalGBps);
    for (int b = 0; b < p.device_count(); ++b) {
      CHECK(p.device(a, b).token == p.device(b, a).token);
      CHECK(p.device(a, b).type == p.device(b, a).type);
      CHECK(p.device(a, b).bw_GBps == p.device(b, a).bw_GBps);
      CHECK(p.device(a, b).links.size() + 1 == p.device(a, b).route.size());
    }
  }
  CHECK(p.gpu_node(2) == g2);
  CHECK(p.gpu_node(3) == g3);
  CHECK(p.gpu_node(4) == g4);
  CHECK(p.gpu_node(5) == g5);
  CHECK(p.nic_node(0) == nic);
  CHECK(t.cpu_of(g5) == c1);
}

TEST_CASE("NVLink paths: direct, through NVSwitch, through one GPU (NVB)", "[topo][paths]") {
  Topology t;
  const int c0 = t.add_cpu(cpu(0));
  int g[4];
  for (int d = 0; d < 4; ++d) g[d] = t.add_gpu(c0, pci("0000:1" + std::to_string(d) + ":00.0"), d, 90);
  t.add_nvlink(g[0], g[1], 2);
  t.add_nvlink(g[1], g[2], 3);
  t.add_nvlink(g[1], g[0], 1);  // bonds with the first: 3 links
  validate(t, "test");
  const PathMatrix p(t);
  CHECK(p.gpu(0, 1).token.text() == "NV3");
  CHECK(p.gpu(0, 1).bw_GBps == Approx(3 * 20.6));
  CHECK(p.gpu(0, 2).type == PathType::nvb);
  CHECK(p.gpu(0, 2).token.text() == "PHB");  // nvidia-smi shows the PCIe class for NVB pairs
  CHECK(p.gpu(0, 2).route == std::vector<int>{g[0], g[1], g[2]});
  CHECK(p.gpu(0, 3).type == PathType::phb);  // GPU3 has no NVLink
  CHECK(p.gpu(2, 3).route.size() == 3);      // GPU, CPU, GPU: never through another GPU over PCIe

  Topology s;
  const int c = s.add_cpu(cpu(0));
  const int sw = s.add_nvswitch("0000:c4:00.0");
  int h[3];
  for (int d = 0; d < 3; ++d) h[d] = s.add_gpu(c, pci("0000:2" + std::to_string(d) + ":00.0"), d, 80);
  s.add_nvlink(h[0], sw, 12);
  s.add_nvlink(h[1], sw, 12);
  s.add_nvlink(h[2], sw, 6);
  validate(s, "test");
  const PathMatrix q(s);
  CHECK(q.gpu(0, 1).token.text() == "NV12");
  CHECK(q.gpu(0, 2).token.text() == "NV6");  // the narrower side of the fabric
  CHECK(q.gpu(0, 2).type == PathType::nvl);
  CHECK(q.gpu(0, 2).bw_GBps == 120.0);
  CHECK(q.gpu(0, 1).route == std::vector<int>{h[0], sw, h[1]});
}

TEST_CASE("fewest hops first: a weak NVLink still beats a wider PCIe path", "[topo][paths]") {
  Topology t;
  const int c0 = t.add_cpu(cpu(0));
  const int sw = t.add_pci_switch(c0, pci("0000:01:00.0"));
  const int a = t.add_gpu(sw, pci("0000:02:00.0"), 0, 86);
  const int b = t.add_gpu(sw, pci("0000:03:00.0"), 1, 86);
  t.add_nvlink(a, b, 1);  // 12 GB/s on SM86, while the PCIe switch gives 24
  const PathMatrix p(t);
  CHECK(p.gpu(0, 1).type == PathType::nvl);  // NCCL's rule: one hop beats two
  CHECK(p.gpu(0, 1).bw_GBps == 12.0);
}

TEST_CASE("links carry kind, count, rate and latency", "[topo][paths]") {
  Topology t;
  const int c0 = t.add_cpu(cpu(0, CpuFamily::intel_skylake));
  const int c1 = t.add_cpu(cpu(1, CpuFamily::intel_skylake));
  const int g0 = t.add_gpu(c0, pci("0000:01:00.0", 0.0, 0), 0, 70);  // unknown speed and width
  const int g1 = t.add_gpu(c1, pci("0000:02:00.0"), 1, 70);
  t.add_nvlink(g0, g1, 2);
  t.add_nic(c0, pci("0000:03:00.0"), {NetPort{"mlx5_0", 0, 0, 1, "0x0", true}});
  t.default_pcie_generation = 3;
  int pcie = 0, nvlink = 0, socket = 0, network = 0;
  for (const Link& link : links(t)) {
    switch (link.kind) {
      case LinkKind::pcie:
        ++pcie;
        if (link.a == g0) CHECK(link.bw_GBps == 12.0);  // defaults: Gen3 x16
        CHECK(link.latency_us == kPcieLatencyUs);
        break;
      case LinkKind::nvlink:
        ++nvlink;
        CHECK(link.count == 2);
        CHECK(link.bw_GBps == 40.0);
        CHECK(link.latency_us == kNvlinkLatencyUs);
        break;
      case LinkKind::inter_cpu:
        ++socket;
        CHECK(link.bw_GBps == 10.0);
        break;
      case LinkKind::network:
        ++network;
        CHECK(link.b == -1);
        CHECK(link.bw_GBps == kDefaultNicGBps);
        break;
    }
  }
  CHECK(pcie == 3);
  CHECK(nvlink == 1);
  CHECK(socket == 1);
  CHECK(network == 1);
}

TEST_CASE("validate names what is wrong with a hand-built topology", "[topo][paths]") {
  const auto message = [](const Topology& t) {
    try {
      validate(t, "test");
    } catch (const chorus::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Topology orphan;
  orphan.add_gpu(-1, pci("0000:01:00.0"), 0, 80);
  CHECK(message(orphan).find("not attached to any CPU") != std::string::npos);
  Topology gap;
  const int c = gap.add_cpu(cpu(0));
  gap.add_gpu(c, pci("0000:01:00.0"), 1, 80);
  CHECK(message(gap).find("GPU indices must be 0..0") != std::string::npos);
  Topology loop;
  loop.add_cpu(cpu(0));
  const int s1 = loop.add_pci_switch(2, pci("0000:01:00.0"));
  loop.add_pci_switch(s1, pci("0000:02:00.0"));
  CHECK(message(loop).find("cycle") != std::string::npos);
  Topology bad_link;
  const int c2 = bad_link.add_cpu(cpu(0));
  const int g = bad_link.add_gpu(c2, pci("0000:01:00.0"), 0, 80);
  bad_link.add_nvlink(g, g, 1);
  CHECK(message(bad_link).find("invalid nodes") != std::string::npos);
  Topology under_gpu;
  const int c3 = under_gpu.add_cpu(cpu(0));
  const int g3 = under_gpu.add_gpu(c3, pci("0000:01:00.0"), 0, 80);
  under_gpu.add_nic(g3, pci("0000:02:00.0"), {});
  CHECK(message(under_gpu).find("hangs off a gpu") != std::string::npos);
}

}  // namespace test_paths
