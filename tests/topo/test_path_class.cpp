#include <catch2/catch.hpp>

#include <chorus/topo/path_class.hpp>

#include <string>

namespace test_path_class {

using namespace chorus::topo;

TEST_CASE("nvidia-smi tokens parse and print back", "[topo][path_class]") {
  for (const char* text : {"X", "PIX", "PXB", "PHB", "NODE", "SYS", "NV1", "NV12", "NV18", "NV999"}) {
    const auto token = parse_smi_token(text);
    REQUIRE(token);
    CHECK(token->text() == text);
  }
  CHECK(parse_smi_token("NV12")->nvlinks == 12);
  CHECK(parse_smi_token("SOC")->text() == "SYS");  // old drivers
  for (const char* bad : {"", "x", "NV", "NV0", "NV1000", "NVx", "NV-1", "QPI", "SYS ", "pix", "NV1a"}) {
    CHECK_FALSE(parse_smi_token(bad));
  }
}

TEST_CASE("the two vocabularies map onto each other", "[topo][path_class]") {
  CHECK(nccl_type(*parse_smi_token("X")) == PathType::loc);
  CHECK(nccl_type(*parse_smi_token("NV4")) == PathType::nvl);
  CHECK(nccl_type(*parse_smi_token("PIX")) == PathType::pix);
  CHECK(nccl_type(*parse_smi_token("PXB")) == PathType::pxb);
  CHECK(nccl_type(*parse_smi_token("PHB")) == PathType::phb);
  CHECK(nccl_type(*parse_smi_token("NODE")) == PathType::phb);  // NCCL has no NODE
  CHECK(nccl_type(*parse_smi_token("SYS")) == PathType::sys);
}

TEST_CASE("NCCL path types are ordered best first and parse by name", "[topo][path_class]") {
  const PathType order[] = {PathType::loc, PathType::nvl, PathType::nvb, PathType::pix, PathType::pxb,
                            PathType::phb, PathType::sys, PathType::net, PathType::dis};
  for (std::size_t i = 0; i + 1 < std::size(order); ++i) {
    CHECK(worse(order[i], order[i + 1]) == order[i + 1]);
    CHECK(worse(order[i + 1], order[i]) == order[i + 1]);
  }
  for (PathType type : order) CHECK(parse_path_type(to_string(type)) == type);
  CHECK_FALSE(parse_path_type("NODE"));
  CHECK_FALSE(parse_path_type("nvl"));
}

TEST_CASE("PCIe levels rank the PCIe tokens", "[topo][path_class]") {
  CHECK(pcie_level(SmiClass::pix) < pcie_level(SmiClass::pxb));
  CHECK(pcie_level(SmiClass::pxb) < pcie_level(SmiClass::phb));
  CHECK(pcie_level(SmiClass::phb) < pcie_level(SmiClass::node));
  CHECK(pcie_level(SmiClass::node) < pcie_level(SmiClass::sys));
  CHECK(pcie_level(SmiClass::nvlink) == 0);
  CHECK(pcie_level(SmiClass::self) == 0);
}

}  // namespace test_path_class
