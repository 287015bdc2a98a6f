#include <catch2/catch.hpp>

#include <chorus/topo/nccl_xml.hpp>

#include <cstdio>
#include <string>

#include "fixtures.hpp"

namespace test_nccl_xml {

using namespace chorus::topo;
using chorus::Error;

namespace {
std::string error_of(const std::string& text) {
  try {
    read_nccl_xml(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kCpu =
    "<cpu numaid=\"0\" affinity=\"ff\" arch=\"x86_64\" vendor=\"AuthenticAMD\" familyid=\"23\" modelid=\"49\">";

// A one-CPU system around `body`.
std::string in_system(const std::string& body) {
  return "<system version=\"1\">\n" + kCpu + "\n" + body + "\n</cpu>\n</system>\n";
}

std::string gpu(const std::string& busid, int dev, const std::string& links = "", int sm = 80) {
  return "<pci busid=\"" + busid + "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"><gpu dev=\"" +
         std::to_string(dev) + "\" sm=\"" + std::to_string(sm) + "\" rank=\"" + std::to_string(dev) +
         "\" gdr=\"1\">" + links + "</gpu></pci>\n";
}

std::string nvlink(const std::string& target, int count, const std::string& tclass = "0x030200") {
  return "<nvlink target=\"" + target + "\" count=\"" + std::to_string(count) + "\" tclass=\"" + tclass + "\"/>";
}
}  // namespace

TEST_CASE("a minimal file: GPUs, an NVLink listed from both ends, a NIC", "[topo][xml]") {
  const Topology t = read_nccl_xml(in_system(
      gpu("0000:01:00.0", 0, nvlink("0000:02:00.0", 4)) + gpu("0000:02:00.0", 1, nvlink("0000:01:00.0", 4)) +
      "<pci busid=\"0000:03:00.0\" class=\"0x020700\" link_speed=\"8 GT/s\" link_width=\"8\"><nic>"
      "<net name=\"mlx5_0\" dev=\"0\" speed=\"100000\" port=\"1\" guid=\"0x1\" maxconn=\"131072\" gdr=\"1\"/>"
      "<net name=\"mlx5_0\" dev=\"1\" speed=\"100000\" port=\"2\" guid=\"0x1\" maxconn=\"131072\" gdr=\"1\"/>"
      "</nic></pci>"));
  REQUIRE(t.gpu_count() == 2);
  REQUIRE(t.nvlinks.size() == 1);
  CHECK(t.nvlinks[0].count == 4);  // not 8: both ends list the same bond
  REQUIRE(t.nic_nodes().size() == 1);
  const Node& nic = t.nodes[t.nic_nodes()[0]];
  CHECK(nic.name == "mlx5_0");
  CHECK(nic.nets.size() == 2);
  CHECK(nic.nets[1].port == 2);
  CHECK(nic.pci.link_gts == 8.0);
  CHECK(nic.pci.link_width == 8);
  const PathMatrix p(t);
  CHECK(p.gpu(0, 1).token.text() == "NV4");
  CHECK(p.gpu(0, 1).bw_GBps == 80.0);
  CHECK(p.gpu_nic(0, 0).bw_GBps == 6.0);
}

TEST_CASE("NVSwitch targets merge into one fabric node; POWER9 links reach the CPU", "[topo][xml]") {
  std::string links;
  for (int s = 0; s < 6; ++s) links += nvlink("0000:c" + std::to_string(4 + s) + ":00.0", 2, "0x068000");
  const Topology t = read_nccl_xml(in_system(gpu("0000:01:00.0", 0, links) + gpu("0000:02:00.0", 1, links)));
  REQUIRE(t.nodes_of(NodeKind::nvswitch).size() == 1);
  CHECK(t.nodes[t.nodes_of(NodeKind::nvswitch)[0]].pci.busid == "0000:c4:00.0");
  for (const NvLinkBond& bond : t.nvlinks) CHECK(bond.count == 12);
  CHECK(PathMatrix(t).gpu(0, 1).token.text() == "NV12");
  // A target with no class and no <pci> in the file: NCCL takes it for an NVSwitch, so do we.
  const Topology vm = read_nccl_xml(in_system(gpu("0000:01:00.0", 0, "<nvlink target=\"0000:ff:00.0\" count=\"6\"/>")));
  CHECK(vm.nodes_of(NodeKind::nvswitch).size() == 1);
  const Topology p9 = read_nccl_xml(in_system(gpu("0000:01:00.0", 0, nvlink("0000:00:00.0", 3, "0x060400"), 70)));
  REQUIRE(p9.nvlinks.size() == 1);
  CHECK(p9.nodes[p9.nvlinks[0].a].kind == NodeKind::cpu);  // bonds store the lower node index first
  CHECK(PathMatrix(p9).gpu(0, 0).type == PathType::loc);
  CHECK(same_machine(read_nccl_xml(write_nccl_xml(p9)), p9));
}

TEST_CASE("unknown elements and attributes are skipped, comments ignored", "[topo][xml]") {
  const Topology t = read_nccl_xml(
      "<!-- head --><system version=\"1\" extra=\"x\">\n<cpu host_hash=\"0x1\" numaid=\"0\">\n<!-- <gpu dev=\"7\"/> "
      "-->\n" +
      gpu("0000:01:00.0", 0) + "<c2c bw=\"1\"/>\n</cpu>\n<gin/>\n</system>\n");
  CHECK(t.gpu_count() == 1);
}

TEST_CASE("GPUs without dev are numbered in bus id order after the numbered ones", "[topo][xml]") {
  const Topology t = read_nccl_xml(in_system(
      "<pci busid=\"0000:09:00.0\" class=\"0x030200\"/>\n" + gpu("0000:05:00.0", 0) +
      "<pci busid=\"0000:03:00.0\" class=\"0x030000\" vendor=\"0x10de\"/>\n"  // VGA-class NVIDIA GPU
      "<pci busid=\"0000:04:00.0\" class=\"0x030000\" vendor=\"0x1a03\"/>"));  // a BMC's VGA: not a GPU
  REQUIRE(t.gpu_count() == 3);
  const std::vector<int> gpus = t.gpu_nodes();
  CHECK(t.nodes[gpus[0]].pci.busid == "0000:05:00.0");
  CHECK(t.nodes[gpus[1]].pci.busid == "0000:03:00.0");
  CHECK(t.nodes[gpus[2]].pci.busid == "0000:09:00.0");
}

TEST_CASE("link_speed in both spellings, unknown, or a placeholder switch", "[topo][xml]") {
  for (const char* speed : {"16 GT/s", "16.0 GT/s PCIe", "16.0 GT/s"}) {
    const Topology t = read_nccl_xml(in_system("<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"" +
                                            std::string(speed) + "\" link_width=\"16\"/>"));
    CHECK(t.nodes[t.gpu_nodes()[0]].pci.link_gts == 16.0);
  }
  const Topology placeholder =
      read_nccl_xml(in_system("<pci busid=\"ffff:ff:01.0\" class=\"0x060400\" link_speed=\"\" link_width=\"0\">" +
                              gpu("0000:01:00.0", 0, "", 90) + gpu("0000:02:00.0", 1, "", 90) + "</pci>"));
  const PathMatrix p(placeholder);
  CHECK(p.gpu(0, 1).token.text() == "PIX");
  CHECK(placeholder.default_pcie_generation == 5);  // unknown links take the GPUs' generation
  CHECK(p.gpu(0, 1).bw_GBps == 24.0);
}

TEST_CASE("malformed content names the line and element", "[topo][xml]") {
  CHECK(error_of("<topology/>").find("line 1: the root element is <topology>, expected <system>") != std::string::npos);
  CHECK(error_of("<system>" + gpu("0000:01:00.0", 0) + "</system>").find("must be inside a <cpu>") !=
        std::string::npos);
  CHECK(error_of(in_system("<gpu dev=\"0\"/>")).find("line 3: <gpu>: is not allowed inside <cpu>") !=
        std::string::npos);
  CHECK(error_of(in_system("<pci class=\"0x030200\"/>")).find("line 3: <pci>: missing attribute busid") !=
        std::string::npos);
  CHECK(error_of(in_system("<pci busid=\"0000:01:00\" class=\"0x030200\"/>")).find("is not a PCI bus id") !=
        std::string::npos);
  CHECK(
      error_of(in_system(gpu("0000:01:00.0", 0) + gpu("0000:01:00.0", 1))).find("bus id 0000:01:00.0 appears twice") !=
      std::string::npos);
  CHECK(error_of(in_system(gpu("0000:01:00.0", 0) + gpu("0000:02:00.0", 0))).find("dev=\"0\" is also used on line 3") !=
        std::string::npos);
  CHECK(error_of(in_system(gpu("0000:01:00.0", 1))).find("no <gpu> has dev=\"0\"") != std::string::npos);
  CHECK(error_of(in_system("<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"x\" sm=\"80\"/></pci>"))
            .find("attribute dev=\"x\" is not an integer") != std::string::npos);
  CHECK(error_of(in_system("<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"fast\"/>"))
            .find("link_speed=\"fast\"") != std::string::npos);
  CHECK(error_of(in_system("<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_width=\"999\"/>"))
            .find("link_width=\"999\" is not an integer in [0, 64]") != std::string::npos);
  CHECK(error_of(in_system(gpu("0000:01:00.0", 0, "<nvlink target=\"0000:02:00.0\"/>") + gpu("0000:02:00.0", 1)))
            .find("missing attribute count") != std::string::npos);
  CHECK(error_of(in_system(gpu("0000:01:00.0", 0, nvlink("0000:01:00.0", 2)))).find("from a GPU to itself") !=
        std::string::npos);
  CHECK(error_of(in_system(gpu("0000:01:00.0", 0, nvlink("0000:02:00.0", 2)) +
                           gpu("0000:02:00.0", 1, nvlink("0000:01:00.0", 3))))
            .find("disagree on their NVLink count (2 vs 3)") != std::string::npos);
  CHECK(error_of(in_system(gpu("0000:01:00.0", 0, nvlink("0000:02:00.0", 2) + nvlink("0000:02:00.0", 2)) +
                        gpu("0000:02:00.0", 1)))
            .find("listed twice") != std::string::npos);
  CHECK(error_of(in_system("<pci busid=\"0000:05:00.0\" class=\"0x060400\"/>" +
                           gpu("0000:01:00.0", 0, nvlink("0000:05:00.0", 2))))
            .find("is a pci, not a GPU or NVSwitch") != std::string::npos);
  CHECK(error_of(
            in_system(
                "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\"/><pci busid=\"0000:02:00.0\"/></pci>"))
            .find("cannot contain another <pci>") != std::string::npos);
  CHECK(error_of("<system><cpu numaid=\"0\"/><cpu numaid=\"0\"/></system>").find("a second <cpu> with numaid 0") !=
        std::string::npos);
}

TEST_CASE("every malformed XML fixture throws chorus::Error naming line and element", "[topo][xml][fixtures]") {
  struct Case {
    const char* file;
    const char* expected;
  };
  const Case cases[] = {
      {"malformed/xml-unclosed-tag.xml", "end of file inside <cpu>"},
      {"malformed/xml-mismatched-close-tag.xml", "line 7: closing tag </cpu> does not match <pci> opened on line 3"},
      {"malformed/xml-attribute-without-quotes.xml", "line 8: attribute busid needs a quoted value"},
      {"malformed/xml-nvlink-target-not-found.xml", "line 5: <nvlink>: target 0000:99:00.0 is a GPU"},
      {"malformed/xml-missing-busid.xml", "line 8: <pci>: missing attribute busid"},
      {"malformed/xml-deeply-nested.xml", "line 3: elements nested deeper than"},
      {"malformed/xml-huge-attribute.xml", "line 8: <pci>: attribute busid="},
      {"malformed/xml-empty.xml", "no XML element found"},
      {"malformed/binary-garbage.bin", "line 1:"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    const std::string message = error_of(read_text_file(fixtures::path(c.file), "test"));
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.find("chorus::topo::read_nccl_xml") == 0);
    CHECK(message.size() < 400);  // the 1 MiB attribute is not echoed whole
  }
}

TEST_CASE("writing and reading back gives the same machine, for every fixture", "[topo][xml]") {
  for (const char* file : {"dgx1-v100.txt", "dgx1-v100.xml", "dgx-a100.txt", "dgx-a100.xml", "dgx-h100.txt",
                           "dgx-h100-nolegend.txt", "dgx-h100.xml", "pcie-8gpu-2socket.txt", "pcie-8gpu-2socket.xml",
                           "workstation-2gpu-nvlink.txt", "workstation-2gpu-nvlink.xml", "box-4gpu-nvlink-pairs.txt",
                           "box-4gpu-nvlink-pairs.xml", "old-driver-soc.txt", "no-gpu-element.xml",
                           "xml-comments.xml", "link-speed-forms.xml"}) {
    INFO(file);
    const Topology original = fixtures::load(file);
    const std::string text = write_nccl_xml(original);
    const Topology back = read_nccl_xml(text);
    CHECK(describe(back) == describe(original));
    CHECK(same_machine(back, original));
    CHECK(write_nccl_xml(back) == text);  // the writer is canonical
    // What NCCL's loader needs on every element.
    CHECK(text.rfind("<system version=\"1\">", 0) == 0);
    const PathMatrix a(original), b(back);
    for (int x = 0; x < a.device_count(); ++x) {
      for (int y = 0; y < a.device_count(); ++y) {
        CHECK(a.device(x, y).token == b.device(x, y).token);
        CHECK(a.device(x, y).bw_GBps == b.device(x, y).bw_GBps);
      }
    }
  }
}

TEST_CASE("the writer emits the attributes NCCL's loader reads", "[topo][xml]") {
  const std::string text = write_nccl_xml(fixtures::load("dgx1-v100.txt"));
  for (const char* needed : {"<cpu numaid=\"0\" affinity=\"", "arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\"",
                             "<gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\">", "tclass=\"0x030200\"",
                             "link_speed=\"8.0 GT/s PCIe\" link_width=\"16\"", "<net name=\"mlx5_0\" dev=\"0\"",
                             "maxconn=\"", "latency=\"", "port=\"1\"", "guid=\""}) {
    INFO(needed);
    CHECK(text.find(needed) != std::string::npos);
  }
  const std::string switched = write_nccl_xml(fixtures::load("dgx-a100.txt"));
  CHECK(switched.find("count=\"12\" tclass=\"0x068000\"") != std::string::npos);
  const std::string nodes = write_nccl_xml(fixtures::load("dgx-h100.txt"));
  CHECK(nodes.find("host_bridge=\"1\"") != std::string::npos);  // keeps NODE apart from PHB
}

TEST_CASE("files are written and read back, and a bad path is an error", "[topo][xml]") {
  const Topology t = fixtures::load("box-4gpu-nvlink-pairs.xml");
  const std::string path = "chorus_test_topology.xml";
  write_nccl_xml_file(t, path);
  CHECK(same_machine(read_nccl_xml_file(path), t));
  std::remove(path.c_str());
  CHECK_THROWS_AS(write_nccl_xml_file(t, "/nonexistent/dir/x.xml"), Error);
  CHECK_THROWS_AS(read_nccl_xml_file("/nonexistent/dir/x.xml"), Error);
}

}  // namespace test_nccl_xml
