#include <catch2/catch.hpp>

#include <chorus/topo/detect.hpp>

#include <string>
#include <vector>

#include "fake_sysfs.hpp"

namespace test_detect {

using namespace chorus::topo;

TEST_CASE("detect: sysfs plus NVML, and a note when NVML is missing", "[topo][detect]") {
  fixtures::FakeSysfs fs;
  fs.numa(0, "0-7");
  fs.cpuinfo("GenuineIntel", 6, 85);
  fs.gpu("pci0000:00/0000:00:01.0/0000:01:00.0");
  fs.gpu("pci0000:00/0000:00:02.0/0000:02:00.0");
  DetectOptions options;
  options.sysfs_root = fs.root();
  options.nvml_library = "libchorus-no-such-nvml.so.1";
  std::vector<std::string> notes;
  const Topology topo = detect(options, &notes);
  CHECK(topo.gpu_count() == 2);
  CHECK(topo.nvlinks.empty());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("NVML not available") != std::string::npos);
}

TEST_CASE("detect on this machine never fails for want of a GPU or a driver", "[topo][detect]") {
  std::vector<std::string> notes;
  const Topology topo = detect(DetectOptions{}, &notes);
  CHECK(topo.cpu_nodes().size() >= 1);
  if (topo.gpu_count() == 0) CHECK_FALSE(notes.empty());
}

}  // namespace test_detect
