// The facts tests/fixtures/topo/README.md lists for every machine, checked on every file of it.
#include <catch2/catch.hpp>

#include <chorus/topo/ring_search.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "fixtures.hpp"

namespace test_fixture_facts {

using namespace chorus::topo;

namespace {
struct Loaded {
  Topology topo;
  PathMatrix paths;
  explicit Loaded(const std::string& file) : topo(fixtures::load(file)), paths(topo) {}
  std::string token(const std::string& a, const std::string& b) const { return fixtures::token(topo, paths, a, b); }
  double bw(const std::string& a, const std::string& b) const { return fixtures::bandwidth(topo, paths, a, b); }
  PathType type(int a, int b) const { return paths.gpu(a, b).type; }
};

bool is_xml(const std::string& file) { return file.find(".xml") != std::string::npos; }

// NODE in nvidia-smi's text is PHB in NCCL's XML, which does not record host bridges.
std::string node(const std::string& file) { return is_xml(file) ? "PHB" : "NODE"; }

std::string g(int i) { return "GPU" + std::to_string(i); }

std::vector<int> best_ring(const Loaded& m) { return search_rings(m.topo, m.paths).rings.front().order; }

// How many directed rings through GPU 0 are as good as the best one (twice the README's count).
int optimal_directed_rings(const PathMatrix& paths) {
  std::vector<int> order(static_cast<std::size_t>(paths.gpu_count()));
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> best;
  int count = 0;
  do {
    const std::vector<double> q = ring_quality(paths, order);
    if (count == 0 || ring_better(q, best)) {
      best = q;
      count = 1;
    } else if (!ring_better(best, q)) {
      ++count;
    }
  } while (std::next_permutation(order.begin() + 1, order.end()));
  return count;
}
double best_bottleneck(const Loaded& m) { return search_rings(m.topo, m.paths).rings.front().bottleneck_GBps; }
}  // namespace

TEST_CASE("DGX-1 V100: hybrid cube-mesh tokens, NVB paths, NICs and the all-NV2 ring", "[topo][fixtures]") {
  const char* matrix[8][8] = {
      {"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"}, {"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
      {"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"}, {"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
      {"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"}, {"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
      {"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"}, {"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"}};
  for (const char* file : {"dgx1-v100.txt", "dgx1-v100-tabs.txt", "dgx1-v100-nolegend.txt", "dgx1-v100.xml"}) {
    INFO(file);
    const Loaded m(file);
    REQUIRE(m.paths.gpu_count() == 8);
    REQUIRE(m.paths.nic_count() == 4);
    int links_per_gpu[8] = {};
    for (int a = 0; a < 8; ++a) {
      for (int b = 0; b < 8; ++b) {
        CHECK(m.token(g(a), g(b)) == matrix[a][b]);
        const Path& path = m.paths.gpu(a, b);
        if (path.token.cls == SmiClass::nvlink) {
          links_per_gpu[a] += path.token.nvlinks;
          CHECK(path.type == PathType::nvl);
          CHECK(path.bw_GBps == 20.0 * path.token.nvlinks);
        }
      }
    }
    for (int count : links_per_gpu) CHECK(count == 6);  // V100 has 6 NVLinks
    // SYS pairs go NVLink through one GPU (NCCL's NVB): 40 when both hops are NV2.
    for (auto [a, b] : {std::pair{0, 7}, {1, 6}, {2, 5}, {3, 4}}) {
      CHECK(m.type(a, b) == PathType::nvb);
      CHECK(m.paths.gpu(a, b).bw_GBps == 40.0);
    }
    for (auto [a, b] : {std::pair{0, 5}, {0, 6}, {1, 4}, {1, 7}, {2, 4}, {2, 7}, {3, 5}, {3, 6}}) {
      CHECK(m.type(a, b) == PathType::nvb);
      CHECK(m.paths.gpu(a, b).bw_GBps == 20.0);
    }
    CHECK(m.token("GPU0", "mlx5_0") == "PIX");
    CHECK(m.token("GPU1", "mlx5_0") == "PIX");
    CHECK(m.token("GPU0", "mlx5_1") == "PHB");
    CHECK(m.token("GPU0", "mlx5_2") == "SYS");
    CHECK(m.token("GPU0", "mlx5_3") == "SYS");
    CHECK(m.token("mlx5_0", "mlx5_1") == "PHB");
    CHECK(m.token("mlx5_0", "mlx5_2") == "SYS");
    CHECK(m.bw("GPU0", "mlx5_0") == 12.0);
    CHECK(m.bw("GPU0", "mlx5_1") == 12.0);
    CHECK(m.bw("GPU0", "mlx5_2") == 6.0);
    CHECK(best_ring(m) == std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4});
    CHECK(best_bottleneck(m) == 40.0);
    // The naive order crosses the sockets twice.
    CHECK(ring_quality(m.paths, {0, 1, 2, 3, 4, 5, 6, 7}).front() < 40.0);
    // The NV1 links form the second 8-cycle the README describes.
    CHECK(ring_quality(m.paths, {0, 1, 3, 7, 5, 4, 6, 2}).front() == 20.0);
  }
}

TEST_CASE("DGX A100: NV12 through NVSwitch, PXB pair NICs, NPS4 SYS", "[topo][fixtures]") {
  for (const char* file : {"dgx-a100.txt", "dgx-a100.xml"}) {
    INFO(file);
    const Loaded m(file);
    REQUIRE(m.paths.gpu_count() == 8);
    CHECK(m.topo.has(NodeKind::nvswitch));
    for (int a = 0; a < 8; ++a) {
      for (int b = 0; b < 8; ++b) {
        if (a == b) continue;
        CHECK(m.token(g(a), g(b)) == "NV12");
        CHECK(m.paths.gpu(a, b).bw_GBps == Approx(240.0));
        CHECK(m.type(a, b) == PathType::nvl);
      }
    }
    for (int gpu = 0; gpu < 8; ++gpu) {
      for (int nic = 0; nic < 8; ++nic) {
        const std::string name = "mlx5_" + std::to_string(nic);
        CHECK(m.token(g(gpu), name) == (gpu / 2 == nic / 2 ? "PXB" : "SYS"));
      }
    }
    CHECK(m.token("mlx5_0", "mlx5_1") == "PXB");
    if (!is_xml(file)) {
      CHECK(m.token("mlx5_8", "mlx5_9") == "PIX");
      CHECK(m.token("GPU0", "mlx5_8") == "SYS");
    } else {
      CHECK(m.token("GPU0", "mlx5_8") == "SYS");  // one <pci> with two <net>: one NIC in XML
    }
    CHECK(m.bw("GPU0", "mlx5_0") == 24.0);
    CHECK(m.bw("GPU0", "mlx5_2") == 16.0);
    CHECK(best_ring(m) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(best_bottleneck(m) == Approx(240.0));
    CHECK(search_rings(m.topo, m.paths).rings.size() > 1);  // NVSwitch capacity carries several channels
  }
}

TEST_CASE("DGX H100: NV18, each GPU's own NIC PXB, NODE within the socket", "[topo][fixtures]") {
  const int own_nic[8] = {0, 3, 4, 5, 6, 9, 10, 11};
  for (const char* file : {"dgx-h100.txt", "dgx-h100-nolegend.txt", "dgx-h100.xml"}) {
    INFO(file);
    const Loaded m(file);
    REQUIRE(m.paths.gpu_count() == 8);
    const bool legend = std::string(file) != "dgx-h100-nolegend.txt";
    const auto nic = [&](int k) { return (legend ? "mlx5_" : "NIC") + std::to_string(k); };
    for (int a = 0; a < 8; ++a) {
      for (int b = 0; b < 8; ++b) {
        if (a == b) continue;
        CHECK(m.token(g(a), g(b)) == "NV18");
        CHECK(m.paths.gpu(a, b).bw_GBps == Approx(370.8));
      }
      for (int k : {0, 3, 4, 5, 6, 9, 10, 11}) {
        const bool same_socket = (a < 4) == (k < 6);
        const std::string expected = k == own_nic[a] ? "PXB" : same_socket ? node(file) : "SYS";
        CHECK(m.token(g(a), nic(k)) == expected);
      }
    }
    if (!is_xml(file)) {
      CHECK(m.token(nic(1), nic(2)) == "PIX");
      CHECK(m.token(nic(7), nic(8)) == "PIX");
      for (int a = 0; a < 8; ++a) {
        const int cpu = m.topo.cpu_of(m.paths.gpu_node(a));
        CHECK(m.topo.nodes[cpu].cpu.numa == (a < 4 ? 0 : 1));
      }
    }
    CHECK(m.bw("GPU0", nic(0)) == 48.0);
    CHECK(m.bw("GPU0", nic(3)) == 48.0);
    CHECK(m.bw("GPU0", nic(6)) == 22.0);
    CHECK(best_ring(m) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(best_bottleneck(m) == Approx(370.8));
  }
}

TEST_CASE("8-GPU PCIe server: PIX/PXB/PHB/NODE/SYS and the capacity-aware ring", "[topo][fixtures]") {
  for (const char* file : {"pcie-8gpu-2socket.txt", "pcie-8gpu-2socket.xml", "link-speed-forms.xml"}) {
    INFO(file);
    const Loaded m(file);
    REQUIRE(m.paths.gpu_count() == 8);
    const auto expect = [&](int a, int b, const std::string& token, double bw) {
      CHECK(m.token(g(a), g(b)) == token);
      CHECK(m.token(g(b), g(a)) == token);
      CHECK(m.paths.gpu(a, b).bw_GBps == bw);
    };
    for (auto [a, b] : {std::pair{0, 1}, {4, 5}, {6, 7}}) expect(a, b, "PIX", 24);
    expect(2, 3, "PXB", 24);
    for (auto [a, b] : {std::pair{0, 2}, {0, 3}, {1, 2}, {1, 3}}) expect(a, b, "PHB", 24);
    for (auto [a, b] : {std::pair{4, 6}, {4, 7}, {5, 6}, {5, 7}}) expect(a, b, node(file), 24);
    for (int a = 0; a < 4; ++a) {
      for (int b = 4; b < 8; ++b) expect(a, b, "SYS", 16);
    }
    const std::string nic = m.paths.nic_count() == 1 ? device_names(m.topo, m.paths)[8] : "?";
    CHECK(m.token("GPU0", nic) == "PIX");
    CHECK(m.token("GPU1", nic) == "PIX");
    CHECK(m.token("GPU2", nic) == "PHB");
    CHECK(m.token("GPU3", nic) == "PHB");
    for (int a = 4; a < 8; ++a) CHECK(m.token(g(a), nic) == "SYS");
    if (is_xml(file)) {
      for (int a = 0; a < 8; ++a) CHECK(m.bw(g(a), nic) == 12.0);  // the NIC's own Gen3 link (not in .txt)
    }
    CHECK(best_ring(m) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(ring_quality(m.paths, best_ring(m)) == std::vector<double>{16, 16, 24, 24, 24, 24, 24, 24});
    // The counter-example: 4->6 and 5->7 both go up switch S2's uplink and split it.
    const std::vector<double> shared = ring_hops(m.paths, {0, 1, 2, 3, 4, 6, 5, 7});
    CHECK(shared[4] == 12.0);
    CHECK(shared[6] == 12.0);
  }
}

TEST_CASE("workstation: two GPUs on an NVLink bridge", "[topo][fixtures]") {
  for (const char* file : {"workstation-2gpu-nvlink.txt", "workstation-2gpu-nvlink.xml"}) {
    INFO(file);
    const Loaded m(file);
    REQUIRE(m.paths.gpu_count() == 2);
    CHECK(m.token("GPU0", "GPU1") == "NV4");
    CHECK(m.paths.gpu(0, 1).bw_GBps == 48.0);  // SM86: 12 per link
    CHECK(m.paths.nic_count() == 0);
    CHECK(best_ring(m) == std::vector<int>{0, 1});
    CHECK(best_bottleneck(m) == 48.0);  // the two hops use the two directions of the bridge
    // Under the NVLink the GPUs sit on different root complexes.
    CHECK(smi_token(m.topo, m.paths.gpu_node(0), m.paths.gpu_node(1)).text() == "NV4");
  }
  // Guessing from NV4 alone gives SM70's 20 per link, as the README warns.
  const Topology guessed = read_nvsmi_file(fixtures::path("workstation-2gpu-nvlink.txt"));
  CHECK(PathMatrix(guessed).gpu(0, 1).bw_GBps == 80.0);
}

TEST_CASE("4 GPUs in two NVLink pairs: the ring crosses the sockets exactly twice", "[topo][fixtures]") {
  for (const char* file : {"box-4gpu-nvlink-pairs.txt", "box-4gpu-nvlink-pairs.xml", "xml-comments.xml"}) {
    INFO(file);
    const Loaded m(file);
    REQUIRE(m.paths.gpu_count() == 4);
    CHECK(m.token("GPU0", "GPU1") == "NV12");
    CHECK(m.token("GPU2", "GPU3") == "NV12");
    for (auto [a, b] : {std::pair{0, 2}, {0, 3}, {1, 2}, {1, 3}}) {
      CHECK(m.token(g(a), g(b)) == "SYS");
      CHECK(m.paths.gpu(a, b).bw_GBps == 10.0);
    }
    CHECK(m.paths.gpu(0, 1).bw_GBps == 240.0);
    CHECK(m.token("GPU0", "mlx5_0") == "PIX");
    CHECK(m.token("GPU1", "mlx5_0") == node(file));
    CHECK(m.token("GPU2", "mlx5_0") == "SYS");
    CHECK(m.token("GPU2", "mlx5_1") == "PIX");
    CHECK(m.token("GPU3", "mlx5_1") == node(file));
    CHECK(best_ring(m) == std::vector<int>{0, 1, 2, 3});
    CHECK(ring_quality(m.paths, {0, 1, 2, 3}) == std::vector<double>{10, 10, 240, 240});
    CHECK(ring_quality(m.paths, {0, 1, 3, 2}) == std::vector<double>{10, 10, 240, 240});
    // No NVLink at all, and every hop crosses the socket link, two in each direction: 10 / 2 each.
    // (The README's (10, 10, 10, 10) leaves out that sharing; either way it is the worse ring.)
    CHECK(ring_quality(m.paths, {0, 2, 1, 3}) == std::vector<double>{5, 5, 5, 5});
    CHECK(ring_better(ring_quality(m.paths, {0, 1, 2, 3}), ring_quality(m.paths, {0, 2, 1, 3})));
  }
  // The comments file is the same machine as the plain one (placeholder switch ids aside).
  const Topology plain = fixtures::load("box-4gpu-nvlink-pairs.xml");
  const Topology commented = fixtures::load("xml-comments.xml");
  CHECK(plain.gpu_count() == commented.gpu_count());
  for (int d = 0; d < 4; ++d) {
    CHECK(plain.nodes[plain.gpu_nodes()[d]].pci.busid == commented.nodes[commented.gpu_nodes()[d]].pci.busid);
  }
}

TEST_CASE("old driver: SOC reads as SYS", "[topo][fixtures]") {
  const Loaded m("old-driver-soc.txt");
  REQUIRE(m.paths.gpu_count() == 4);
  CHECK(m.token("GPU0", "GPU1") == "PIX");
  CHECK(m.token("GPU2", "GPU3") == "PIX");
  for (auto [a, b] : {std::pair{0, 2}, {0, 3}, {1, 2}, {1, 3}}) CHECK(m.token(g(a), g(b)) == "SYS");
  CHECK(m.token("GPU2", "mlx4_0") == "PHB");
  CHECK(m.token("GPU0", "mlx4_0") == "SYS");
  CHECK(m.paths.gpu(0, 1).bw_GBps == 12.0);
  CHECK(m.paths.gpu(0, 2).bw_GBps == 6.0);
  CHECK(best_ring(m) == std::vector<int>{0, 1, 2, 3});
  CHECK(ring_quality(m.paths, {0, 1, 2, 3}) == std::vector<double>{6, 6, 12, 12});
  CHECK(smi_matrix(m.topo, m.paths).find("SOC") == std::string::npos);
}

// Issue 7, item 9: these two shapes of real output used to be rejected.
TEST_CASE("4x GH200: NUMA Affinity lists and GPU NUMA IDs, NV6 between every pair", "[topo][fixtures]") {
  const std::string file = "gh200-4gpu.txt";
  const NvsmiMatrix matrix = parse_nvsmi(read_text_file(fixtures::path(file), "test"));
  CHECK(matrix.numa_affinity_list == std::vector<std::string>{"0,5-11", "1,13-19", "2,21-27", "3,29-35"});
  CHECK(matrix.numa_affinity == std::vector<int>{0, 1, 2, 3});
  CHECK(matrix.gpu_numa_id == std::vector<int>{4, 12, 20, 28});
  std::vector<std::string> warnings;
  const Topology topo = read_nvsmi_file(fixtures::path(file), fixtures::options_for(file), &warnings);
  CHECK(warnings.empty());
  const PathMatrix paths(topo);
  REQUIRE(paths.gpu_count() == 4);
  CHECK(paths.nic_count() == 0);
  for (int a = 0; a < 4; ++a) {
    // Each superchip is its own NUMA node: the Grace's node, its 72 cores.
    const CpuInfo& cpu = topo.nodes[topo.cpu_of(paths.gpu_node(a))].cpu;
    CHECK(cpu.numa == a);
    CHECK(to_cpulist(*parse_cpumask(cpu.affinity)) == std::to_string(72 * a) + "-" + std::to_string(72 * a + 71));
    for (int b = 0; b < 4; ++b) {
      if (a == b) continue;
      CHECK(fixtures::token(topo, paths, g(a), g(b)) == "NV6");
      CHECK(paths.gpu(a, b).type == PathType::nvl);
      CHECK(paths.gpu(a, b).bw_GBps == Approx(6 * 20.6));
    }
  }
  const RingPlan plan = search_rings(topo, paths);
  CHECK(plan.exact);
  CHECK(plan.rings.front().order == std::vector<int>{0, 1, 2, 3});
  CHECK(plan.rings.front().bottleneck_GBps == Approx(123.6));
  // 60 GB/s per channel (SM90's cap); each GPU's 18 links carry 370.8 / 60 -> 6 channels.
  CHECK(plan.channel_GBps == 60.0);
  REQUIRE(plan.rings.size() == 6);
  std::vector<std::vector<int>> distinct;
  for (const Ring& ring : plan.rings) distinct.push_back(ring.order);
  std::sort(distinct.begin(), distinct.end());
  CHECK(std::unique(distinct.begin(), distinct.end()) == distinct.end());  // each directed ring once
  CHECK(optimal_directed_rings(paths) == 2 * 3);
}

TEST_CASE("8x RTX 4090: every pair SYS, the matrix wins over the NUMA Affinity", "[topo][fixtures]") {
  const std::string file = "rtx4090-8gpu.txt";
  std::vector<std::string> warnings;
  const Topology topo = read_nvsmi_file(fixtures::path(file), fixtures::options_for(file), &warnings);
  CHECK(warnings == std::vector<std::string>{
                        "line 3: GPU0, GPU1, GPU2, GPU3 have NUMA Affinity 0, but the matrix puts them on 4 NUMA "
                        "nodes (SYS between them); following the matrix",
                        "line 7: GPU4, GPU5, GPU6, GPU7 have NUMA Affinity 1, but the matrix puts them on 4 NUMA "
                        "nodes (SYS between them); following the matrix"});
  const PathMatrix paths(topo);
  REQUIRE(paths.gpu_count() == 8);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      CHECK(fixtures::token(topo, paths, g(a), g(b)) == "SYS");
      CHECK(paths.gpu(a, b).type == PathType::sys);
      CHECK(paths.gpu(a, b).bw_GBps == 16.0);  // min(Gen4 x16 24, AMD 16)
    }
  }
  // Only a CPU per GPU prints SYS everywhere. The first GPU of each NUMA Affinity keeps its
  // number, the others get free ones, each once; every CPU keeps its CPU Affinity.
  REQUIRE(topo.cpu_nodes().size() == 8);
  std::vector<int> numas;
  for (int a = 0; a < 8; ++a) {
    const CpuInfo& cpu = topo.nodes[topo.cpu_of(paths.gpu_node(a))].cpu;
    numas.push_back(cpu.numa);
    CHECK(to_cpulist(*parse_cpumask(cpu.affinity)) == (a < 4 ? "0-31,64-95" : "32-63,96-127"));
  }
  CHECK(numas == std::vector<int>{0, 2, 3, 4, 1, 5, 6, 7});
  // The topology survives NCCL XML, which allows each numaid once.
  CHECK(same_machine(read_nccl_xml(write_nccl_xml(topo)), topo));
  const RingPlan plan = search_rings(topo, paths);
  CHECK(plan.rings.front().order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(plan.rings.front().bottleneck_GBps == 16.0);
  CHECK(plan.rings.size() == 1);  // each GPU's x16 link has 24 - 16 = 8 left
  CHECK(optimal_directed_rings(paths) == 2 * 2520);
}

TEST_CASE("VM file without <gpu>: GPUs by PCI class, numbered by bus id", "[topo][fixtures]") {
  const Loaded m("no-gpu-element.xml");
  REQUIRE(m.paths.gpu_count() == 8);
  for (int d = 0; d < 8; ++d) {
    CHECK(m.topo.nodes[m.paths.gpu_node(d)].pci.busid == "000" + std::to_string(d + 1) + ":00:00.0");
  }
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const bool same = (a < 4) == (b < 4);
      CHECK(m.token(g(a), g(b)) == (same ? "PHB" : "SYS"));
      CHECK(m.paths.gpu(a, b).bw_GBps == (same ? 12.0 : 10.0));
    }
  }
  CHECK(best_ring(m) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(ring_quality(m.paths, best_ring(m)) == std::vector<double>{10, 10, 12, 12, 12, 12, 12, 12});
}

TEST_CASE("the .txt and .xml of each machine agree (NODE read as PHB)", "[topo][fixtures]") {
  for (const char* machine : {"dgx1-v100", "dgx-a100", "dgx-h100", "pcie-8gpu-2socket", "workstation-2gpu-nvlink",
                              "box-4gpu-nvlink-pairs"}) {
    INFO(machine);
    const Loaded text(std::string(machine) + ".txt");
    const Loaded xml(std::string(machine) + ".xml");
    REQUIRE(text.paths.gpu_count() == xml.paths.gpu_count());
    for (int a = 0; a < text.paths.gpu_count(); ++a) {
      for (int b = 0; b < text.paths.gpu_count(); ++b) {
        std::string t = text.paths.gpu(a, b).token.text();
        if (t == "NODE") t = "PHB";
        CHECK(t == xml.paths.gpu(a, b).token.text());
        CHECK(text.paths.gpu(a, b).type == xml.paths.gpu(a, b).type);
        CHECK(text.paths.gpu(a, b).bw_GBps == Approx(xml.paths.gpu(a, b).bw_GBps));
      }
    }
    CHECK(best_ring(text) == best_ring(xml));
    CHECK(best_bottleneck(text) == Approx(best_bottleneck(xml)));
  }
}

}  // namespace test_fixture_facts
