#include <catch2/catch.hpp>

#include <chorus/topo/nvsmi_parser.hpp>

#include <string>

#include "fixtures.hpp"

namespace test_nvsmi_parser {

using namespace chorus::topo;
using chorus::Error;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_nvsmi(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("spaces, tabs, terminal colours and CRLF read the same", "[topo][nvsmi]") {
  const std::string spaces =
      "        GPU0    GPU1    CPU Affinity\nGPU0     X      NV2     0-7\nGPU1    NV2      X      0-7\n";
  const std::string tabs = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV2\t0-7\nGPU1\tNV2\t X \t0-7\n";
  const std::string colours =
      "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\x1b[0m\r\nGPU0\t X \tNV2\t0-7\r\nGPU1\tNV2\t X \t0-7\r\n";
  for (const std::string& text : {spaces, tabs, colours}) {
    const NvsmiMatrix m = parse_nvsmi(text);
    CHECK(m.gpus == 2);
    CHECK(m.devices() == 2);
    REQUIRE(m.cells[0][1]);
    CHECK(m.cells[0][1]->text() == "NV2");
    CHECK(m.cells[1][1]->text() == "X");
    CHECK(m.has_cpu_affinity);
    CHECK_FALSE(m.has_numa_affinity);
    CHECK(m.cpu_affinity[1] == "0-7");
    CHECK(m.row_line[1] == 3);
  }
}

TEST_CASE("a single GPU, no affinity columns, text around the matrix", "[topo][nvsmi]") {
  const NvsmiMatrix m = parse_nvsmi("$ nvidia-smi topo -m\n\tGPU0\nGPU0\t X \n\nLegend:\n\n  X    = Self\n");
  CHECK(m.gpus == 1);
  CHECK(m.row_line[0] == 3);
  CHECK(m.cpu_affinity[0].empty());
  CHECK(m.numa_affinity[0] == -1);
}

TEST_CASE("NIC columns take their names from the NIC Legend", "[topo][nvsmi]") {
  const NvsmiMatrix m = parse_nvsmi(
      "\tGPU0\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tPIX\tSYS\t0-3\t0\t\tN/A\n"
      "NIC0\tPIX\t X \tSYS\n"
      "NIC1\tSYS\tSYS\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_10\n");
  CHECK(m.gpus == 1);
  CHECK(m.names == std::vector<std::string>{"GPU0", "mlx5_0", "mlx5_10"});
  CHECK(m.labels == std::vector<std::string>{"GPU0", "NIC0", "NIC1"});
  CHECK(m.numa_affinity[0] == 0);
  CHECK(m.cells[1][2]->text() == "SYS");
}

// Issue 7, item 9: Grace Hopper prints the NUMA Affinity as a list (the CPU's node, then the GPU
// memory's nodes) next to a GPU NUMA ID column.
TEST_CASE("NUMA Affinity is a list of nodes, ranges allowed", "[topo][nvsmi]") {
  const NvsmiMatrix m = parse_nvsmi(
      "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tNV6\tNV6\t0-71\t0,5-11\t\t4\n"
      "GPU1\tNV6\t X \tNV6\t72-143\t1,13-19\t\t12\n"
      "GPU2\tNV6\tNV6\t X \t144-215\tN/A\t\tN/A\n");
  CHECK(m.has_numa_affinity);
  CHECK(m.numa_affinity_list == std::vector<std::string>{"0,5-11", "1,13-19", ""});
  CHECK(m.numa_affinity == std::vector<int>{0, 1, -1});  // the lowest node: the CPU's
  CHECK(m.gpu_numa_id == std::vector<int>{4, 12, -1});
  CHECK(m.cpu_affinity[2] == "144-215");
}

TEST_CASE("missing NIC rows are filled from the GPU rows", "[topo][nvsmi]") {
  const NvsmiMatrix m = parse_nvsmi("GPU0\tmlx5_0\nGPU0\t X \tPHB\n");
  REQUIRE(m.cells[1][0]);
  CHECK(m.cells[1][0]->text() == "PHB");
  CHECK_FALSE(m.cells[1][1]);  // no row said anything about the NIC itself
  CHECK(m.row_line[1] == 0);
}

TEST_CASE("malformed matrices name the line and what was expected", "[topo][nvsmi]") {
  CHECK(error_of("").find("no header line") != std::string::npos);
  CHECK(error_of("hello\nworld\n").find("no header line") != std::string::npos);
  CHECK(error_of("GPU0 X NV1\nGPU1 NV1 X\n").find("line 1: found the GPU0 row before any header") != std::string::npos);
  CHECK(error_of("GPU1 GPU0\n").find("no header line") != std::string::npos);
  CHECK(error_of("GPU0 GPU2\n").find("line 1: expected column GPU1, found GPU2") != std::string::npos);
  CHECK(error_of("GPU0 mlx5_0 GPU1\n").find("GPU column GPU1 comes after a NIC column") != std::string::npos);
  CHECK(error_of("GPU0 mlx5_0 mlx5_0\n").find("column mlx5_0 appears twice") != std::string::npos);
  CHECK(error_of("GPU0 CPU Afinity\n").find("unknown column heading 'CPU'") != std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 X NV1\n").find("no row for GPU1") == std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 X NV1\n").find("line 2: the input ends before the row for GPU1") !=
        std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 X NV1\nGPU1 NV1\n").find("line 3: row GPU1 has 1 entries") != std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 X PCX\nGPU1 PCX X\n").find("line 2: row GPU0, column GPU1: 'PCX'") !=
        std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 NV1 X\nGPU1 X NV1\n").find("expected X on the diagonal") != std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 X X\nGPU1 X X\n").find("X off the diagonal") != std::string::npos);
  CHECK(error_of("GPU0 mlx5_0\nGPU0 X NV2\n").find("NICs have no NVLink") != std::string::npos);
  CHECK(
      error_of("GPU0 GPU1\nGPU0 X NV1\nGPU1 NV2 X\n").find("line 3: GPU1/GPU0 is NV2 but GPU0/GPU1 (line 2) is NV1") !=
      std::string::npos);
  CHECK(error_of("GPU0 GPU1\nGPU0 X NV1\nGPU0 X NV1\nGPU1 NV1 X\n").find("line 3: second row for GPU0") !=
        std::string::npos);
  CHECK(error_of("GPU0 NUMA Affinity\nGPU0 X zero\n").find("NUMA Affinity 'zero' is not a NUMA node list") !=
        std::string::npos);
  CHECK(error_of("GPU0 NUMA Affinity\nGPU0 X 3-1\n").find("NUMA Affinity '3-1' is not a NUMA node list") !=
        std::string::npos);
  CHECK(error_of("GPU0 GPU NUMA ID\nGPU0 X 0,1\n").find("GPU NUMA ID '0,1' is not a number") != std::string::npos);
  CHECK(error_of("GPU0 CPU Affinity\nGPU0 X 1-a\n").find("CPU Affinity '1-a' is not a CPU list") !=
        std::string::npos);
  CHECK(error_of("GPU0 mlx5_0\nGPU0 X PIX\nmlx5_0 PIX X 0-3\n").find("row mlx5_0 has 3 entries") !=
        std::string::npos);
  CHECK(error_of("GPU0 " + std::string(100, 'n') + "\n").find("is not a device name") != std::string::npos);
}

TEST_CASE("oversized matrices are refused before they are allocated", "[topo][nvsmi]") {
  std::string header = "GPU0";
  for (int i = 1; i <= kMaxNvsmiDevices; ++i) header += " NIC" + std::to_string(i);
  CHECK(error_of(header + "\n").find("more than") != std::string::npos);
}

TEST_CASE("every malformed nvidia-smi fixture throws chorus::Error with its line", "[topo][nvsmi][fixtures]") {
  struct Case {
    const char* file;
    const char* expected;  // a piece of the message, including the line the README names
  };
  const Case cases[] = {
      {"malformed/nvsmi-truncated-matrix.txt", "line 6: row GPU4 has 3 entries"},
      {"malformed/nvsmi-ragged-rows.txt", "line 3: row GPU1 has 7 entries"},
      {"malformed/nvsmi-unknown-token.txt", "line 4: row GPU2, column GPU5: 'QPI'"},
      {"malformed/nvsmi-duplicate-gpu-header.txt", "line 1: expected column GPU2, found GPU1"},
      {"malformed/nvsmi-non-square.txt", "line 5: expected the row for GPU3, found the row for NIC0"},
      {"malformed/nvsmi-asymmetric.txt", "line 3: GPU1/GPU0 is NV2 but GPU0/GPU1 (line 2) is NV4"},
      {"malformed/nvsmi-empty.txt", "no header line starting with GPU0"},
      {"malformed/binary-garbage.bin", "read_nvsmi"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    const std::string text = read_text_file(fixtures::path(c.file), "test");
    const std::string message = error_of(text);
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.find("chorus::topo::read_nvsmi") == 0);
  }
}

}  // namespace test_nvsmi_parser
