// The sysfs cpulist format ("0-3,8,10-11") both ways, and the NUMA node of each CPU read from a
// sysfs-shaped folder (a fake one here, so awkward layouts can be tested on any machine).
#include <catch2/catch.hpp>
#include <chorus/bench/cpu_list.hpp>
#include <chorus/bench/numa_nodes.hpp>

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace test_cpu_list {

using namespace chorus::bench;
using Cpus = std::vector<int>;

namespace {
std::string error_text(const std::string& text) {
  try {
    parse_cpu_list(text);
  } catch (const chorus::Error& e) {
    CHECK(e.code() == chorus::ErrorCode::invalid_argument);
    return e.what();
  }
  return "no error";
}

// A throwaway folder shaped like /sys/devices/system/node.
struct FakeNodeDir {
  std::filesystem::path root;
  FakeNodeDir() {
    root = std::filesystem::temp_directory_path() / ("chorus-test-nodes-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
  }
  ~FakeNodeDir() { std::filesystem::remove_all(root); }
  void write(const std::string& relative, const std::string& text) const {
    std::filesystem::create_directories((root / relative).parent_path());
    std::ofstream(root / relative) << text;
  }
};
}  // namespace

TEST_CASE("parse_cpu_list reads numbers, ranges and sysfs's trailing newline") {
  CHECK(parse_cpu_list("0-3,8,10-11") == Cpus{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("0-1\n") == Cpus{0, 1});
  CHECK(parse_cpu_list("5") == Cpus{5});
  CHECK(parse_cpu_list("7-7") == Cpus{7});
  CHECK(parse_cpu_list("") == Cpus{});    // a node with memory and no CPUs
  CHECK(parse_cpu_list("\n") == Cpus{});
  CHECK(parse_cpu_list("3,1,2") == Cpus{1, 2, 3});       // sorted
  CHECK(parse_cpu_list("1,0-2,2") == Cpus{0, 1, 2});     // each once
  CHECK(parse_cpu_list("007,010") == Cpus{7, 10});
  CHECK(parse_cpu_list("65535") == Cpus{kMaxCpu});
  CHECK(parse_cpu_list("65530-65535").size() == 6);
}

TEST_CASE("parse_cpu_list refuses malformed text, quoting it and saying why") {
  CHECK_THAT(error_text("3-1"), Catch::Contains("\"3-1\" has the falling range 3-1"));
  CHECK_THAT(error_text("0-"), Catch::Contains("ends where a CPU number should be"));
  CHECK_THAT(error_text("1,"), Catch::Contains("ends where a CPU number should be"));
  CHECK_THAT(error_text("1,,2"), Catch::Contains("has ',' at position 2"));
  CHECK_THAT(error_text(",1"), Catch::Contains("has ',' at position 0"));
  CHECK_THAT(error_text("-1"), Catch::Contains("has '-' at position 0"));
  CHECK_THAT(error_text("+1"), Catch::Contains("has '+' at position 0"));
  CHECK_THAT(error_text(" 1"), Catch::Contains("has ' ' at position 0"));
  CHECK_THAT(error_text("1 ,2"), Catch::Contains("has ' ' at position 1"));
  CHECK_THAT(error_text("0-7:2/4"), Catch::Contains("has ':' at position 3"));
  CHECK_THAT(error_text("1-2-3"), Catch::Contains("has '-' at position 3"));
  CHECK_THAT(error_text("a"), Catch::Contains("has 'a' at position 0"));
  CHECK_THAT(error_text("1\n\n"), Catch::Contains("has '\n' at position 1"));
  CHECK_THAT(error_text("65536"), Catch::Contains("names a CPU above 65535"));
  CHECK_THAT(error_text("0-99999999999999999999999"), Catch::Contains("names a CPU above 65535"));
  CHECK_THAT(error_text("3-1"), Catch::StartsWith("chorus::bench::parse_cpu_list: "));
  CHECK_THAT(error_text("3-1"), Catch::Contains("e.g. 0-3,8,10-11"));
}

TEST_CASE("format_cpu_list writes ranges back, and round-trips") {
  CHECK(format_cpu_list({}) == "");
  CHECK(format_cpu_list({4}) == "4");
  CHECK(format_cpu_list({0, 1}) == "0-1");
  CHECK(format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(format_cpu_list({1, 3, 5}) == "1,3,5");
  for (const char* text : {"0-3,8,10-11", "0", "2-5,7-9,63", "0,2,4-6"}) {
    CHECK(format_cpu_list(parse_cpu_list(text)) == text);
  }
}

TEST_CASE("numa_node_of_cpus reads every node<N>/cpulist and skips the rest") {
  FakeNodeDir sys;
  sys.write("node0/cpulist", "0-1,4\n");
  sys.write("node1/cpulist", "2-3,5\n");
  sys.write("node2/cpulist", "\n");          // memory only
  sys.write("node12/cpulist", "6\n");        // two-digit node numbers
  sys.write("online", "0-2,12\n");           // not a node
  sys.write("has_cpu", "0-1,12\n");
  sys.write("nodex/cpulist", "7\n");         // not node<digits>
  const auto node_of = numa_node_of_cpus(sys.root.string());
  CHECK(node_of == std::map<int, int>{{0, 0}, {1, 0}, {4, 0}, {2, 1}, {3, 1}, {5, 1}, {6, 12}});
}

TEST_CASE("numa_node_of_cpus: no folder means no known nodes; bad files are errors naming them") {
  CHECK(numa_node_of_cpus("/nonexistent-chorus-dir/node").empty());
  FakeNodeDir sys;
  sys.write("node0/cpulist", "0-1\n");
  sys.write("node1/cpulist", "1-2\n");  // CPU 1 twice
  try {
    numa_node_of_cpus(sys.root.string());
    FAIL("a CPU listed by two nodes was accepted");
  } catch (const chorus::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("CPU 1 is listed by both node"));
    CHECK_THAT(e.what(), Catch::Contains("cpulist"));
  }
  sys.write("node1/cpulist", "2-x\n");
  CHECK_THROWS_WITH(numa_node_of_cpus(sys.root.string()), Catch::Contains("node1/cpulist") && Catch::Contains("'x'"));
  std::filesystem::remove(sys.root / "node1/cpulist");
  CHECK_THROWS_WITH(numa_node_of_cpus(sys.root.string()), Catch::Contains("cannot read") &&
                                                               Catch::Contains("node1/cpulist"));
}

TEST_CASE("this machine's sysfs parses, and names the node of every CPU this process may use") {
  const auto node_of = numa_node_of_cpus();
  if (!std::filesystem::is_directory(kSysfsNodeDir)) return;  // no sysfs nodes: nothing is known, nothing to check
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    INFO("CPU " << cpu);
    CHECK(node_of.count(cpu) == 1);
  }
}

}  // namespace test_cpu_list
