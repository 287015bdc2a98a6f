// Runs the chorus-topo binary (path in $CHORUS_TOPO) and reads its --json output with
// nlohmann-json: on every fixture, on fake sysfs trees, and on this machine.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <chorus/topo.hpp>

#include "fake_sysfs.hpp"
#include "fixtures.hpp"

using nlohmann::json;
using namespace chorus::topo;

namespace {
struct Run {
  int status = -1;
  std::string out;
};

// Runs chorus-topo with `args` (already shell-quoted), capturing stdout; stderr goes to the log.
Run run(const std::string& args) {
  const char* tool = std::getenv("CHORUS_TOPO");
  REQUIRE(tool != nullptr);
  Run result;
  FILE* pipe = popen(("'" + std::string(tool) + "' " + args).c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), got);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string quote(const std::string& text) { return "'" + text + "'"; }

// The reader options of a .txt fixture as chorus-topo flags.
std::string flags_for(const std::string& file) {
  if (file.find(".xml") != std::string::npos) return "--nccl-xml " + quote(fixtures::path(file));
  const NvsmiOptions o = fixtures::options_for(file);
  static const char* const kCpu[] = {"", "broadwell", "skylake", "sapphire-rapids", "emerald-rapids", "amd",
                                     "zhaoxin", "power9", "arm"};
  return "--nvsmi " + quote(fixtures::path(file)) + " --sm " + std::to_string(o.sm) + " --pcie-gen " +
         std::to_string(o.pcie_generation) + " --cpu " + kCpu[static_cast<int>(o.cpu)];
}

// The JSON must be exactly one object: parse() rejects trailing content.
json run_json(const std::string& args) {
  const Run r = run(args + " --json");
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("chorus-topo --json agrees with the library on every fixture", "[topo][tool]") {
  for (const char* file : {"dgx1-v100.txt", "dgx1-v100.xml", "dgx-a100.txt", "dgx-a100.xml", "dgx-h100.txt",
                           "dgx-h100.xml", "dgx-h100-nolegend.txt", "pcie-8gpu-2socket.txt", "pcie-8gpu-2socket.xml",
                           "workstation-2gpu-nvlink.txt", "workstation-2gpu-nvlink.xml", "box-4gpu-nvlink-pairs.txt",
                           "box-4gpu-nvlink-pairs.xml", "old-driver-soc.txt", "no-gpu-element.xml",
                           "xml-comments.xml", "link-speed-forms.xml", "gh200-4gpu.txt", "rtx4090-8gpu.txt"}) {
    INFO(file);
    const json out = run_json(flags_for(file));
    REQUIRE(out.is_object());
    const Topology topo = fixtures::load(file);
    const PathMatrix paths(topo);
    const RingPlan plan = search_rings(topo, paths);
    const int n = paths.gpu_count();
    CHECK(out["gpus"].get<int>() == n);
    REQUIRE(out["links"].size() == static_cast<std::size_t>(n));
    REQUIRE(out["bandwidth_GBps"].size() == static_cast<std::size_t>(n));
    for (int a = 0; a < n; ++a) {
      REQUIRE(out["links"][a].size() == static_cast<std::size_t>(n));
      CHECK(out["links"][a][a].get<std::string>() == "X");
      for (int b = 0; b < n; ++b) {
        CHECK(out["links"][a][b].get<std::string>() == paths.gpu(a, b).token.text());
        CHECK(out["bandwidth_GBps"][a][b].get<double>() == Approx(paths.gpu(a, b).bw_GBps));
      }
    }
    REQUIRE_FALSE(out["rings"].empty());
    CHECK(out["rings"][0].get<std::vector<int>>() == plan.rings.front().order);
    CHECK(out["ring_bandwidth_GBps"].get<double>() == Approx(plan.rings.front().bottleneck_GBps));
    CHECK(out["channels"].get<std::size_t>() == plan.rings.size());
    REQUIRE(out["trees"].size() == 2);
    CHECK(out["trees"][0]["parent"].size() == static_cast<std::size_t>(n));
  }
}

TEST_CASE("chorus-topo gives the README's best ring on each machine", "[topo][tool]") {
  struct Expected {
    const char* file;
    std::vector<int> ring;
    double bottleneck;
  };
  const Expected machines[] = {
      {"dgx1-v100.txt", {0, 3, 2, 1, 5, 6, 7, 4}, 40.0},  {"dgx-a100.txt", {0, 1, 2, 3, 4, 5, 6, 7}, 240.0},
      {"dgx-h100.txt", {0, 1, 2, 3, 4, 5, 6, 7}, 370.8},  {"pcie-8gpu-2socket.txt", {0, 1, 2, 3, 4, 5, 6, 7}, 16.0},
      {"workstation-2gpu-nvlink.txt", {0, 1}, 48.0},      {"box-4gpu-nvlink-pairs.txt", {0, 1, 2, 3}, 10.0},
      {"old-driver-soc.txt", {0, 1, 2, 3}, 6.0},          {"no-gpu-element.xml", {0, 1, 2, 3, 4, 5, 6, 7}, 10.0},
      {"gh200-4gpu.txt", {0, 1, 2, 3}, 123.6},            {"rtx4090-8gpu.txt", {0, 1, 2, 3, 4, 5, 6, 7}, 16.0},
  };
  for (const Expected& m : machines) {
    INFO(m.file);
    const json out = run_json(flags_for(m.file));
    CHECK(out["rings"][0].get<std::vector<int>>() == m.ring);
    CHECK(out["ring_bandwidth_GBps"].get<double>() == Approx(m.bottleneck));
  }
}

TEST_CASE("chorus-topo --dump-xml writes a file that reads back as the same machine", "[topo][tool]") {
  const std::string path = "chorus_topo_dump_test.xml";
  const Run r = run(flags_for("dgx1-v100.txt") + " --dump-xml " + path);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("ring 0: 0 -> 3 -> 2 -> 1 -> 5 -> 6 -> 7 -> 4 -> 0") != std::string::npos);
  CHECK(same_machine(read_nccl_xml_file(path), fixtures::load("dgx1-v100.txt")));
  std::remove(path.c_str());
}

TEST_CASE("chorus-topo on a fake sysfs tree, with and without GPUs", "[topo][tool]") {
  fixtures::FakeSysfs fs;
  fs.numa(0, "0-7");
  fs.numa(1, "8-15");
  fs.cpuinfo("GenuineIntel", 6, 85);
  const Run none = run("--sysfs " + quote(fs.root()));
  CHECK(none.status == 0);
  CHECK(none.out.find("No GPU found") != std::string::npos);
  CHECK(none.out.find("NUMA 1: CPUs 8-15 (Intel Skylake)") != std::string::npos);
  const json empty = run_json("--sysfs " + quote(fs.root()));
  CHECK(empty["gpus"].get<int>() == 0);
  CHECK(empty["links"].empty());
  CHECK(empty["rings"].empty());
  CHECK(empty["numa_nodes"].size() == 2);

  fs.gpu("pci0000:00/0000:00:01.0/0000:01:00.0");
  fs.gpu("pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  const json two = run_json("--sysfs " + quote(fs.root()));
  CHECK(two["gpus"].get<int>() == 2);
  CHECK(two["links"][0][1].get<std::string>() == "SYS");
  CHECK(two["rings"][0].get<std::vector<int>>() == std::vector<int>{0, 1});
  CHECK(two["ring_bandwidth_GBps"].get<double>() == Approx(10.0));
}

TEST_CASE("chorus-topo on this machine: exit 0 with or without GPU and NVML", "[topo][tool]") {
  const Run text = run("--nvml-library libchorus-no-such-nvml.so.1");
  CHECK(text.status == 0);
  CHECK(text.out.find("CPU / NUMA layout") != std::string::npos);
  const json out = run_json("");
  CHECK(out["gpus"].get<int>() >= 0);
  CHECK(out["numa_nodes"].size() >= 1);
}

TEST_CASE("chorus-topo rejects malformed input with status 2", "[topo][tool]") {
  for (const char* file : {"malformed/nvsmi-asymmetric.txt", "malformed/nvsmi-non-square.txt",
                           "malformed/binary-garbage.bin"}) {
    INFO(file);
    CHECK(run("--nvsmi " + quote(fixtures::path(file)) + " --json 2>/dev/null").status == 2);
    CHECK(run("--nvsmi " + quote(fixtures::path(file)) + " --json 2>/dev/null").out.empty());
  }
  CHECK(
      run("--nccl-xml " + quote(fixtures::path("malformed/xml-nvlink-target-not-found.xml")) + " 2>/dev/null").status ==
      2);
}

// Issue 7, item 11: a /proc/cpuinfo that never ends made the tool exit 0 after the allocation
// failure was swallowed; now it is status 2 and the reader's message.
TEST_CASE("chorus-topo --sysfs fails with status 2 on a file that never ends", "[topo][tool]") {
  fixtures::FakeSysfs fs;
  fs.numa(0, "0-7");
  const std::string cpuinfo = fs.root() + "/proc/cpuinfo";
  std::filesystem::create_symlink("/dev/zero", cpuinfo);
  const Run r = run("--sysfs " + quote(fs.root()) + " 2>&1");
  CHECK(r.status == 2);
  CHECK(r.out.find("chorus-topo: error: chorus::topo::read_sysfs: '" + cpuinfo + "' is larger than 64 MiB") !=
        std::string::npos);
}

// Issue 7, item 9: the matrix overruling the affinity columns is a note, not an error.
TEST_CASE("chorus-topo shows where the matrix overrules the affinity columns", "[topo][tool]") {
  const json out = run_json(flags_for("rtx4090-8gpu.txt"));
  REQUIRE(out["notes"].size() == 2);
  CHECK(out["notes"][0].get<std::string>().find("GPU0, GPU1, GPU2, GPU3 have NUMA Affinity 0") != std::string::npos);
  const Run text = run(flags_for("rtx4090-8gpu.txt") + " 2>&1");
  CHECK(text.status == 0);
  CHECK(text.out.find("note: line 7: GPU4, GPU5, GPU6, GPU7 have NUMA Affinity 1") != std::string::npos);
  CHECK(text.out.find("chorus WARN") == std::string::npos);  // said once, as a note
  CHECK(run_json(flags_for("gh200-4gpu.txt"))["notes"].empty());
}
