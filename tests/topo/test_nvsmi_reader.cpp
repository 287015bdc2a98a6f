#include <catch2/catch.hpp>

#include <chorus/topo/nvsmi_reader.hpp>
#include <chorus/topo/report.hpp>

#include <string>

#include "fixtures.hpp"

namespace test_nvsmi_reader {

using namespace chorus::topo;
using chorus::Error;

namespace {
std::string error_of(const std::string& text) {
  try {
    read_nvsmi(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A square matrix text from rows of tokens (GPUs only).
std::string matrix(const std::vector<std::vector<std::string>>& rows) {
  std::string text;
  for (std::size_t i = 0; i < rows.size(); ++i) text += " GPU" + std::to_string(i);
  text += "\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    text += "GPU" + std::to_string(i);
    for (const std::string& cell : rows[i]) text += " " + cell;
    text += "\n";
  }
  return text;
}

std::string clique(int n, const std::string& token) {
  std::vector<std::vector<std::string>> rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) rows[i].push_back(i == j ? "X" : token);
  }
  return matrix(rows);
}
}  // namespace

TEST_CASE("the GPU generation is guessed from the NVLink count", "[topo][nvsmi]") {
  CHECK(infer_sm(18) == 90);
  CHECK(infer_sm(12) == 80);
  CHECK(infer_sm(6) == 70);
  CHECK(infer_sm(4) == 70);
  CHECK(infer_sm(0) == 0);
  const Topology h100 = read_nvsmi(clique(8, "NV18"));
  CHECK(h100.nodes[h100.gpu_nodes()[0]].sm == 90);
  CHECK(h100.default_pcie_generation == 5);
  CHECK(h100.nodes[h100.cpu_nodes()[0]].cpu.family() == CpuFamily::intel_sapphire_rapids);
  const Topology a100 = read_nvsmi(clique(8, "NV12"));
  CHECK(a100.nodes[a100.gpu_nodes()[0]].sm == 80);
  CHECK(a100.nodes[a100.cpu_nodes()[0]].cpu.family() == CpuFamily::amd);
  const Topology pcie = read_nvsmi(clique(2, "PIX"));
  CHECK(pcie.nodes[pcie.gpu_nodes()[0]].sm == 0);
  CHECK(pcie.default_pcie_generation == 3);
  // The options win over every guess.
  const Topology told = read_nvsmi(clique(8, "NV12"), NvsmiOptions{86, 5, CpuFamily::intel_skylake});
  CHECK(told.nodes[told.gpu_nodes()[3]].sm == 86);
  CHECK(PathMatrix(told).gpu(0, 1).bw_GBps == 12 * 12.0);
  CHECK(told.nodes[told.cpu_nodes()[0]].cpu.family() == CpuFamily::intel_skylake);
  CHECK_THROWS_AS(read_nvsmi(clique(2, "PIX"), NvsmiOptions{80, 9, CpuFamily::amd}), Error);
}

TEST_CASE("more NVLinks than a GPU has means an NVSwitch fabric", "[topo][nvsmi]") {
  const Topology a100 = read_nvsmi(clique(8, "NV12"));  // 84 links per GPU: switched
  REQUIRE(a100.nodes_of(NodeKind::nvswitch).size() == 1);
  CHECK(a100.nvlinks.size() == 8);
  for (const NvLinkBond& bond : a100.nvlinks) CHECK(bond.count == 12);
  const Topology dgx2 = read_nvsmi(clique(16, "NV6"));  // V100 DGX-2: 6 links to the fabric
  CHECK(dgx2.nodes_of(NodeKind::nvswitch).size() == 1);
  CHECK(PathMatrix(dgx2).gpu(3, 11).bw_GBps == 6 * 20.0);
  const Topology quad = read_nvsmi(clique(4, "NV4"));  // HGX A100 4-GPU: 12 links, direct
  CHECK_FALSE(quad.has(NodeKind::nvswitch));
  CHECK(quad.nvlinks.size() == 6);
  // A fabric must connect everyone it serves.
  std::vector<std::vector<std::string>> rows(3);
  const char* cells[3][3] = {{"X", "NV18", "NV18"}, {"NV18", "X", "SYS"}, {"NV18", "SYS", "X"}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) rows[i].push_back(cells[i][j]);
  }
  CHECK(error_of(matrix(rows)).find("contradicts") != std::string::npos);
}

TEST_CASE("the derived PCIe tree prints the matrix it came from", "[topo][nvsmi]") {
  // Two GPUs per switch, two switches under one top switch, a fifth GPU alone on another host
  // bridge of the same NUMA node, three on the other socket.
  const std::vector<std::vector<std::string>> rows = {{"X", "PIX", "PXB", "PXB", "NODE", "SYS", "SYS", "SYS"},
                                                      {"PIX", "X", "PXB", "PXB", "NODE", "SYS", "SYS", "SYS"},
                                                      {"PXB", "PXB", "X", "PIX", "NODE", "SYS", "SYS", "SYS"},
                                                      {"PXB", "PXB", "PIX", "X", "NODE", "SYS", "SYS", "SYS"},
                                                      {"NODE", "NODE", "NODE", "NODE", "X", "SYS", "SYS", "SYS"},
                                                      {"SYS", "SYS", "SYS", "SYS", "SYS", "X", "PHB", "PHB"},
                                                      {"SYS", "SYS", "SYS", "SYS", "SYS", "PHB", "X", "PHB"},
                                                      {"SYS", "SYS", "SYS", "SYS", "SYS", "PHB", "PHB", "X"}};
  const Topology topo = read_nvsmi(matrix(rows));
  const PathMatrix paths(topo);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) CHECK(paths.gpu(a, b).token.text() == (a == b ? "X" : rows[a][b]));
  }
  CHECK(topo.cpu_nodes().size() == 2);
  CHECK(topo.nodes_of(NodeKind::pci_switch).size() == 3);  // top switch + two leaf switches
  CHECK(paths.gpu(0, 2).type == PathType::pxb);
  CHECK(paths.gpu(0, 4).type == PathType::phb);  // NCCL's name for NODE
}

TEST_CASE("contradictory matrices are errors, not guesses", "[topo][nvsmi]") {
  // PIX is transitive: 0-1 and 1-2 on one switch put 0-2 on it too.
  CHECK(error_of(matrix({{"X", "PIX", "SYS"}, {"PIX", "X", "PIX"}, {"SYS", "PIX", "X"}}))
            .find("contradicts the rest of the matrix") != std::string::npos);
  CHECK(error_of(matrix({{"X", "PIX", "PXB"}, {"PIX", "X", "PIX"}, {"PXB", "PIX", "X"}}))
            .find("contradicts") != std::string::npos);
}

// Issue 7, item 9: real drivers print matrices that disagree with their own affinity columns
// (an 8x RTX 4090 server: every pair SYS, GPUs of one NUMA node included). The tree must print
// the matrix, so the matrix wins and the disagreement is a warning.
TEST_CASE("where the matrix and the affinity columns disagree, the matrix wins with a warning", "[topo][nvsmi]") {
  std::vector<std::string> warnings;
  // SYS between GPUs of one NUMA Affinity: two NUMA nodes, numbered apart.
  const Topology sys = read_nvsmi(" GPU0 GPU1 NUMA Affinity\nGPU0 X SYS 0\nGPU1 SYS X 0\n", {}, &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "line 3: GPU0, GPU1 have NUMA Affinity 0, but the matrix puts them on 2 NUMA nodes (SYS "
                       "between them); following the matrix");
  REQUIRE(sys.cpu_nodes().size() == 2);
  CHECK(sys.nodes[sys.cpu_of(sys.gpu_nodes()[0])].cpu.numa == 0);
  CHECK(sys.nodes[sys.cpu_of(sys.gpu_nodes()[1])].cpu.numa == 1);
  CHECK(PathMatrix(sys).gpu(0, 1).token.text() == "SYS");
  // PIX between GPUs of different NUMA Affinity: one NUMA node.
  warnings.clear();
  const Topology pix = read_nvsmi(" GPU0 GPU1 NUMA Affinity\nGPU0 X PIX 0\nGPU1 PIX X 1\n", {}, &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "line 3: GPU0 and GPU1 are on one NUMA node by the matrix, but their affinity columns "
                       "differ (NUMA Affinity 0 vs NUMA Affinity 1); following the matrix");
  CHECK(pix.cpu_nodes().size() == 1);
  CHECK(PathMatrix(pix).gpu(0, 1).token.text() == "PIX");
  // Agreeing columns give no warning; without a list to write to, warnings go to the log.
  warnings.clear();
  read_nvsmi(" GPU0 GPU1 NUMA Affinity\nGPU0 X SYS 0\nGPU1 SYS X 1\n", {}, &warnings);
  CHECK(warnings.empty());
  CHECK_NOTHROW(read_nvsmi(" GPU0 GPU1 NUMA Affinity\nGPU0 X SYS 0\nGPU1 SYS X 0\n"));
  // A matrix that contradicts itself is still an error.
  CHECK(error_of(" GPU0 GPU1 GPU2 NUMA Affinity\nGPU0 X PIX SYS 0\nGPU1 PIX X PIX 0\nGPU2 SYS PIX X 0\n")
            .find("contradicts the rest of the matrix") != std::string::npos);
}

TEST_CASE("NUMA Affinity lists: Grace Hopper's CPU node and GPU memory nodes", "[topo][nvsmi]") {
  std::vector<std::string> warnings;
  const Topology topo = read_nvsmi(
      " GPU0 GPU1 CPU Affinity NUMA Affinity GPU NUMA ID\n"
      "GPU0 X NV6 0-71 0,5-11 4\nGPU1 NV6 X 72-143 1,13-19 12\n",
      NvsmiOptions{90, 5, CpuFamily::arm}, &warnings);
  CHECK(warnings.empty());
  const int cpu0 = topo.cpu_of(topo.gpu_nodes()[0]);
  const int cpu1 = topo.cpu_of(topo.gpu_nodes()[1]);
  CHECK(cpu0 != cpu1);  // different lists: different NUMA nodes, numbered by their CPU node
  CHECK(topo.nodes[cpu0].cpu.numa == 0);
  CHECK(topo.nodes[cpu1].cpu.numa == 1);
  // The same list spelled differently is the same NUMA node.
  const Topology same = read_nvsmi(" GPU0 GPU1 NUMA Affinity\nGPU0 X NV6 0,5-11\nGPU1 NV6 X 0,5,6-11\n");
  CHECK(same.cpu_nodes().size() == 1);
}

TEST_CASE("affinity columns place GPUs on NUMA nodes", "[topo][nvsmi]") {
  const Topology topo = read_nvsmi(" GPU0 GPU1 CPU Affinity NUMA Affinity\nGPU0 X NV4 0-3 1\nGPU1 NV4 X 4-7 0\n");
  const int cpu0 = topo.cpu_of(topo.gpu_nodes()[0]);
  const int cpu1 = topo.cpu_of(topo.gpu_nodes()[1]);
  CHECK(cpu0 != cpu1);
  CHECK(topo.nodes[cpu0].cpu.numa == 1);
  CHECK(topo.nodes[cpu0].cpu.affinity == "0000000f");
  CHECK(topo.nodes[cpu1].cpu.affinity == "000000f0");
  // Without affinity columns, NVLink-only groups share a NUMA node (nothing keeps them apart).
  const Topology merged = read_nvsmi(clique(2, "NV4"));
  CHECK(merged.cpu_nodes().size() == 1);
}

TEST_CASE("reading the printed matrix back gives the same tokens", "[topo][nvsmi]") {
  for (const char* file : {"dgx1-v100.txt", "dgx-a100.xml", "dgx-h100.txt", "pcie-8gpu-2socket.xml",
                           "box-4gpu-nvlink-pairs.txt", "old-driver-soc.txt", "no-gpu-element.xml"}) {
    INFO(file);
    const Topology topo = fixtures::load(file);
    const PathMatrix paths(topo);
    const Topology again = read_nvsmi(smi_matrix(topo, paths), fixtures::options_for(file));
    const PathMatrix back(again);
    REQUIRE(back.device_count() == paths.device_count());
    for (int a = 0; a < paths.device_count(); ++a) {
      for (int b = 0; b < paths.device_count(); ++b) CHECK(back.device(a, b).token == paths.device(a, b).token);
    }
    CHECK(device_names(again, back) == device_names(topo, paths));
  }
}

TEST_CASE("a missing file is a clear error", "[topo][nvsmi]") {
  try {
    read_nvsmi_file("/nonexistent/chorus/topo.txt");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "chorus::topo::read_nvsmi: cannot open '/nonexistent/chorus/topo.txt'");
  }
}

}  // namespace test_nvsmi_reader
