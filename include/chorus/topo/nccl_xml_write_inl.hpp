// nccl_xml.hpp's writer: a Topology as the XML NCCL reads (NCCL_TOPO_FILE) and write_nccl_xml_file.
// Compiled in every translation unit in header-only mode, once in libchorus in compiled mode
// (core/config.hpp). Included by nccl_xml_inl.hpp; not for direct use.
#pragma once


#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "busid.hpp"
#include "nccl_xml.hpp"
#include "text_file.hpp"
#include "topology.hpp"
#include "xml.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
CHORUS_FUNC std::string format_gts(double gts) {
  char text[32];
  // The kernel's spelling, which NCCL reads ("16.0 GT/s PCIe"); odd rates keep every digit so the
  // file reads back to the same number.
  const bool tenths = std::fabs(gts * 10 - std::round(gts * 10)) < 1e-9;
  std::snprintf(text, sizeof text, tenths ? "%.1f GT/s PCIe" : "%.17g GT/s PCIe", gts);
  return text;
}
}  // namespace detail

CHORUS_FUNC std::string write_nccl_xml(const Topology& topo) {
  validate(topo, "write_nccl_xml");
  const int n = static_cast<int>(topo.nodes.size());
  std::vector<std::vector<int>> children(topo.nodes.size());
  for (int i = 0; i < n; ++i) {
    if (topo.nodes[i].parent >= 0) children[topo.nodes[i].parent].push_back(i);
  }
  for (auto& list : children) {
    std::stable_sort(list.begin(), list.end(),
                     [&topo](int a, int b) { return topo.nodes[a].pci.busid < topo.nodes[b].pci.busid; });
  }
  const auto set = [](xml::Element& e, const char* key, const std::string& value) {
    e.attributes.emplace_back(key, value);
  };
  const auto set_if = [&set](xml::Element& e, const char* key, const std::string& value) {
    if (!value.empty()) set(e, key, value);
  };
  const auto nvlinks_of = [&topo](int gpu) {
    std::vector<xml::Element> out;
    for (const NvLinkBond& bond : topo.nvlinks) {
      if (bond.a != gpu && bond.b != gpu) continue;
      const Node& other = topo.nodes[bond.a == gpu ? bond.b : bond.a];
      xml::Element link;
      link.name = "nvlink";
      std::string tclass = other.kind == NodeKind::gpu ? "0x030200" : "0x068000";
      std::string target = other.pci.busid;
      if (other.kind == NodeKind::cpu) {
        tclass = "0x060400";
        target = "0000:00:00.0";
      }
      link.attributes = {{"target", target}, {"count", std::to_string(bond.count)}, {"tclass", tclass}};
      out.push_back(std::move(link));
    }
    std::sort(out.begin(), out.end(), [](const xml::Element& a, const xml::Element& b) {
      return a.attributes[0].second < b.attributes[0].second;
    });
    return out;
  };

  // Builds the element for `node` and its subtree (depth is the PCIe tree's, a handful of levels).
  std::vector<bool> visiting(topo.nodes.size(), false);
  const auto build = [&](const auto& self, int node) -> xml::Element {
    const Node& nd = topo.nodes[node];
    xml::Element e;
    if (visiting[node]) return e;
    visiting[node] = true;
    if (nd.kind == NodeKind::nic && nd.pci.busid.empty()) {
      e.name = "nic";
    } else {
      e.name = "pci";
      set(e, "busid", nd.pci.busid);
      std::string cls = nd.pci.class_code;
      if (cls.empty()) cls = nd.kind == NodeKind::gpu ? "0x030200" : nd.kind == NodeKind::nic ? "0x020700" : "0x060400";
      set(e, "class", cls);
      set_if(e, "vendor", nd.pci.vendor);
      set_if(e, "device", nd.pci.device);
      set_if(e, "subsystem_vendor", nd.pci.subsystem_vendor);
      set_if(e, "subsystem_device", nd.pci.subsystem_device);
      if (nd.pci.link_gts > 0) set(e, "link_speed", detail::format_gts(nd.pci.link_gts));
      if (nd.pci.link_width > 0) set(e, "link_width", std::to_string(nd.pci.link_width));
      if (topo.nodes[nd.parent].kind == NodeKind::cpu && nd.host_bridge != 0) {
        set(e, "host_bridge", std::to_string(nd.host_bridge));
      }
    }
    if (nd.kind == NodeKind::gpu) {
      xml::Element gpu;
      gpu.name = "gpu";
      gpu.attributes = {{"dev", std::to_string(nd.dev)},
                        {"sm", std::to_string(nd.sm)},
                        {"rank", std::to_string(nd.rank)},
                        {"gdr", nd.gdr ? "1" : "0"}};
      gpu.children = nvlinks_of(node);
      e.children.push_back(std::move(gpu));
    } else if (nd.kind == NodeKind::nic) {
      xml::Element nic;
      nic.name = "nic";
      for (const NetPort& port : nd.nets) {
        xml::Element net;
        net.name = "net";
        net.attributes = {{"name", port.name},
                          {"dev", std::to_string(port.dev)},
                          {"speed", std::to_string(port.speed_mbps)},
                          {"port", std::to_string(port.port)},
                          {"latency", "0"},
                          {"guid", port.guid},
                          {"maxconn", "65536"},
                          {"gdr", port.gdr ? "1" : "0"},
                          {"coll", "0"}};
        nic.children.push_back(std::move(net));
      }
      if (e.name == "nic") {
        e.children = std::move(nic.children);
      } else {
        e.children.push_back(std::move(nic));
      }
    } else {
      for (int child : children[node]) e.children.push_back(self(self, child));
    }
    return e;
  };

  xml::Element system;
  system.name = "system";
  system.attributes = {{"version", "1"}};
  std::vector<int> cpus = topo.cpu_nodes();
  std::sort(cpus.begin(), cpus.end(),
            [&topo](int a, int b) { return topo.nodes[a].cpu.numa < topo.nodes[b].cpu.numa; });
  for (int cpu_node : cpus) {
    const CpuInfo& info = topo.nodes[cpu_node].cpu;
    xml::Element cpu;
    cpu.name = "cpu";
    set(cpu, "numaid", std::to_string(info.numa));
    set_if(cpu, "affinity", info.affinity);
    set_if(cpu, "arch", info.arch);
    set_if(cpu, "vendor", info.vendor);
    if (!info.vendor.empty() || info.family_id != 0 || info.model_id != 0) {
      set(cpu, "familyid", std::to_string(info.family_id));
      set(cpu, "modelid", std::to_string(info.model_id));
    }
    for (int child : children[cpu_node]) cpu.children.push_back(build(build, child));
    system.children.push_back(std::move(cpu));
  }
  return xml::write(system);
}

CHORUS_FUNC void write_nccl_xml_file(const Topology& topo, const std::string& path) {
  const std::string text = write_nccl_xml(topo);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw detail::topo_error("write_nccl_xml", "cannot create '", path, "'");
  out << text;
  if (!out.flush()) throw detail::topo_error("write_nccl_xml", "cannot write '", path, "'");
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
