// nccl_xml.hpp's reader: the XML-to-Topology builder and read_nccl_xml. Compiled in every translation unit
// in header-only mode, once in libchorus in compiled mode (core/config.hpp). Included by nccl_xml_inl.hpp;
// not for direct use.
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
constexpr const char* kXmlCall = "read_nccl_xml";

[[noreturn]] CHORUS_FUNC void xml_fail(const xml::Element& at, const std::string& what) {
  throw topo_error(kXmlCall, "line ", at.line, ": <", at.name, ">: ", what);
}

CHORUS_FUNC std::string attr_or(const xml::Element& e, const char* key, const char* fallback = "") {
  const std::string* value = e.attribute(key);
  return value ? *value : fallback;
}

// An integer attribute (decimal, or hex with 0x); `fallback` when absent, an error when malformed.
CHORUS_FUNC long long int_attr(const xml::Element& e, const char* key, std::optional<long long> fallback,
                               long long lo, long long hi) {
  const std::string* value = e.attribute(key);
  if (value == nullptr) {
    if (!fallback) xml_fail(e, std::string("missing attribute ") + key);
    return *fallback;
  }
  const char* begin = value->c_str();
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(begin, &end, 0);
  if (value->empty() || end != begin + value->size() || errno != 0 || parsed < lo || parsed > hi) {
    xml_fail(e, std::string("attribute ") + key + "=\"" + excerpt(*value) + "\" is not an integer in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return parsed;
}

// "16 GT/s", "16.0 GT/s PCIe", "2.5 GT/s"; empty or "Unknown..." is 0 (unknown).
CHORUS_FUNC double parse_link_speed(const xml::Element& e, const std::string& text) {
  if (text.empty() || text.compare(0, 7, "Unknown") == 0) return 0.0;
  const char* begin = text.c_str();
  char* end = nullptr;
  const double gts = std::strtod(begin, &end);
  std::string_view rest(end);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (end == begin || !(gts > 0 && gts < 1000) || rest.substr(0, 4) != "GT/s") {
    xml_fail(e, "link_speed=\"" + excerpt(text) + "\" is not like \"16.0 GT/s PCIe\" or \"16 GT/s\"");
  }
  return gts;
}

CHORUS_FUNC std::string busid_attr(const xml::Element& e, const char* key) {
  const std::string* value = e.attribute(key);
  if (value == nullptr) xml_fail(e, std::string("missing attribute ") + key);
  const auto busid = normalize_busid(*value);
  if (!busid) {
    xml_fail(e, std::string("attribute ") + key + "=\"" + excerpt(*value) + "\" is not a PCI bus id like 0000:07:00.0");
  }
  return *busid;
}

CHORUS_FUNC bool class_is(const std::string& code, const char* prefix) {
  std::string lower = code;
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
  return lower.compare(0, std::char_traits<char>::length(prefix), prefix) == 0;
}

struct PendingLink {
  const xml::Element* element;
  int gpu;
  std::string target;
  std::string tclass;
  int count;
};

struct PendingGpu {
  int node;
  bool has_dev;
  int line;
};

class XmlBuilder {
 public:
  Topology build(const xml::Element& root) {
    if (root.name != "system") {
      throw topo_error(kXmlCall, "line ", root.line, ": the root element is <", root.name, ">, expected <system>");
    }
    for (const xml::Element& child : root.children) {
      if (child.name == "cpu") {
        add_cpu(child);
      } else if (child.name == "pci" || child.name == "gpu" || child.name == "nic" || child.name == "nvlink") {
        xml_fail(child, "must be inside a <cpu> element");
      }
    }
    number_gpus();
    resolve_nvlinks();
    // Links the file gives no speed for (placeholder switches) get the GPUs' usual generation.
    int sm = 0;
    for (int gpu : topo_.nodes_of(NodeKind::gpu)) {
      const int s = topo_.nodes[gpu].sm;
      if (s > 0 && (sm == 0 || s < sm)) sm = s;
    }
    topo_.default_pcie_generation = typical_pcie_generation(sm);
    validate(topo_, kXmlCall);
    return std::move(topo_);
  }

 private:
  void add_cpu(const xml::Element& e) {
    check_capacity(e);
    CpuInfo cpu;
    cpu.numa = static_cast<int>(int_attr(e, "numaid", -1, -1, 1 << 20));
    if (cpu.numa < 0) cpu.numa = static_cast<int>(topo_.cpu_nodes().size());
    for (int other : topo_.cpu_nodes()) {
      if (topo_.nodes[other].cpu.numa == cpu.numa) {
        xml_fail(e, "a second <cpu> with numaid " + std::to_string(cpu.numa));
      }
    }
    cpu.affinity = attr_or(e, "affinity");
    cpu.arch = attr_or(e, "arch");
    cpu.vendor = attr_or(e, "vendor");
    cpu.family_id = static_cast<int>(int_attr(e, "familyid", 0, 0, 1 << 20));
    cpu.model_id = static_cast<int>(int_attr(e, "modelid", 0, 0, 1 << 20));
    const int node = topo_.add_cpu(cpu);
    for (const xml::Element& child : e.children) add_below(child, node);
  }

  // One child of a <cpu> or <pci>. Recursion depth is bounded by the XML reader's nesting limit.
  void add_below(const xml::Element& e, int parent) {
    if (e.name == "pci") {
      add_pci(e, parent);
    } else if (e.name == "nic") {
      check_capacity(e);
      add_nic(e, parent, PciInfo{});
    } else if (e.name == "gpu" || e.name == "nvlink" || e.name == "net" || e.name == "cpu") {
      xml_fail(e, "is not allowed inside <" + std::string(topo_.nodes[parent].kind == NodeKind::cpu ? "cpu" : "pci") +
                      ">");
    }
  }

  void check_capacity(const xml::Element& e) const {
    if (static_cast<int>(topo_.nodes.size()) >= kMaxXmlNodes) {
      xml_fail(e, "more than " + std::to_string(kMaxXmlNodes) + " devices; this is not one machine");
    }
  }

  void add_pci(const xml::Element& e, int parent) {
    check_capacity(e);
    PciInfo pci;
    pci.busid = busid_attr(e, "busid");
    if (topo_.find_busid(pci.busid) >= 0) xml_fail(e, "bus id " + pci.busid + " appears twice");
    pci.class_code = attr_or(e, "class");
    pci.vendor = attr_or(e, "vendor");
    pci.device = attr_or(e, "device");
    pci.subsystem_vendor = attr_or(e, "subsystem_vendor");
    pci.subsystem_device = attr_or(e, "subsystem_device");
    pci.link_gts = parse_link_speed(e, attr_or(e, "link_speed"));
    pci.link_width = static_cast<int>(int_attr(e, "link_width", 0, 0, 64));
    const int host_bridge = static_cast<int>(int_attr(e, "host_bridge", 0, 0, 1 << 16));
    const xml::Element* gpu = nullptr;
    const xml::Element* nic = nullptr;
    for (const xml::Element& child : e.children) {
      if (child.name == "gpu") {
        if (gpu != nullptr) xml_fail(child, "a second <gpu> in one <pci>");
        gpu = &child;
      } else if (child.name == "nic") {
        if (nic != nullptr) xml_fail(child, "a second <nic> in one <pci>");
        nic = &child;
      }
    }
    const bool gpu_class = class_is(pci.class_code, "0x0302") ||
                           (class_is(pci.class_code, "0x0300") && class_is(pci.vendor, "0x10de"));
    if (gpu != nullptr || (nic == nullptr && gpu_class)) {
      if (gpu != nullptr && nic != nullptr) xml_fail(*nic, "a <pci> holds both a <gpu> and a <nic>");
      for (const xml::Element& child : e.children) {
        if (child.name == "pci") xml_fail(child, "a GPU's <pci> cannot contain another <pci>");
      }
      if (pci.class_code.empty()) pci.class_code = "0x030200";
      add_gpu(e, gpu, parent, pci, host_bridge);
      return;
    }
    // A network-class function without <nic> (as VM files list it) is a NIC with no port details.
    bool has_pci_child = false;
    for (const xml::Element& child : e.children) has_pci_child = has_pci_child || child.name == "pci";
    const bool nic_class = class_is(pci.class_code, "0x02") && !has_pci_child;
    if (nic != nullptr || nic_class) {
      for (const xml::Element& child : e.children) {
        if (child.name == "pci") xml_fail(child, "a NIC's <pci> cannot contain another <pci>");
      }
      if (pci.class_code.empty()) pci.class_code = "0x020700";
      const int node = nic != nullptr ? add_nic(*nic, parent, pci) : topo_.add_nic(parent, pci, {});
      topo_.nodes[node].host_bridge = host_bridge;
      return;
    }
    if (pci.class_code.empty()) pci.class_code = "0x060400";  // a <pci> holding others is a switch
    const int node = topo_.add_pci_switch(parent, pci, host_bridge);
    for (const xml::Element& child : e.children) add_below(child, node);
  }

  void add_gpu(const xml::Element& pci_element, const xml::Element* gpu, int parent, const PciInfo& pci,
               int host_bridge) {
    const xml::Element& e = gpu != nullptr ? *gpu : pci_element;
    const bool has_dev = gpu != nullptr && gpu->attribute("dev") != nullptr;
    const int dev = has_dev ? static_cast<int>(int_attr(e, "dev", std::nullopt, 0, 4095)) : -1;
    const int sm = gpu != nullptr ? static_cast<int>(int_attr(e, "sm", 0, 0, 10000)) : 0;
    const int node = topo_.add_gpu(parent, pci, dev, sm, host_bridge);
    if (gpu != nullptr) {
      topo_.nodes[node].rank = static_cast<int>(int_attr(e, "rank", dev, -1, 1 << 30));
      topo_.nodes[node].gdr = int_attr(e, "gdr", 1, 0, 1) != 0;
      for (const xml::Element& child : gpu->children) {
        if (child.name != "nvlink") continue;
        const std::string target = busid_attr(child, "target");
        if (target == pci.busid) xml_fail(child, "an NVLink from a GPU to itself");
        const int count = static_cast<int>(int_attr(child, "count", std::nullopt, 1, 64));
        links_.push_back(PendingLink{&child, node, target, attr_or(child, "tclass"), count});
      }
    }
    gpus_.push_back(PendingGpu{node, has_dev, e.line});
  }

  int add_nic(const xml::Element& e, int parent, const PciInfo& pci) {
    std::vector<NetPort> nets;
    for (const xml::Element& child : e.children) {
      if (child.name != "net") continue;
      NetPort net;
      net.name = attr_or(child, "name");
      net.dev = static_cast<int>(int_attr(child, "dev", 0, -1, 1 << 20));
      net.speed_mbps = static_cast<int>(int_attr(child, "speed", 0, -1, 100000000));
      if (net.speed_mbps < 0) net.speed_mbps = 0;  // some NICs report -1
      net.port = static_cast<int>(int_attr(child, "port", 1, 0, 1 << 20));
      net.guid = attr_or(child, "guid", "0x0");
      net.gdr = int_attr(child, "gdr", 0, 0, 1) != 0;
      nets.push_back(net);
    }
    return topo_.add_nic(parent, pci, std::move(nets));
  }

  void number_gpus() {
    std::vector<int> used;
    for (const PendingGpu& gpu : gpus_) {
      if (gpu.has_dev) used.push_back(topo_.nodes[gpu.node].dev);
    }
    std::vector<PendingGpu> unnumbered;
    for (const PendingGpu& gpu : gpus_) {
      if (!gpu.has_dev) unnumbered.push_back(gpu);
    }
    std::sort(unnumbered.begin(), unnumbered.end(), [this](const PendingGpu& a, const PendingGpu& b) {
      return topo_.nodes[a.node].pci.busid < topo_.nodes[b.node].pci.busid;
    });
    int next = 0;
    for (const PendingGpu& gpu : unnumbered) {
      while (std::find(used.begin(), used.end(), next) != used.end()) ++next;
      topo_.nodes[gpu.node].dev = next;
      topo_.nodes[gpu.node].rank = next;
      used.push_back(next);
    }
    std::map<int, int> line_of_dev;
    for (const PendingGpu& gpu : gpus_) {
      const int dev = topo_.nodes[gpu.node].dev;
      if (line_of_dev.count(dev) != 0) {
        throw topo_error(kXmlCall, "line ", gpu.line, ": <gpu> dev=\"", dev, "\" is also used on line ",
                         line_of_dev[dev]);
      }
      line_of_dev[dev] = gpu.line;
    }
    for (int d = 0; d < static_cast<int>(gpus_.size()); ++d) {
      if (line_of_dev.count(d) == 0) {
        throw topo_error(kXmlCall, "GPU numbers must run 0..", gpus_.size() - 1, " but no <gpu> has dev=\"", d, "\"");
      }
    }
  }

  void resolve_nvlinks() {
    int nvswitch = -1;
    std::string switch_busid;
    for (const PendingLink& link : links_) {
      const bool known = topo_.find_busid(link.target) >= 0;
      if (class_is(link.tclass, "0x0680") ||
          (!known && !class_is(link.tclass, "0x0604") && !class_is(link.tclass, "0x03"))) {
        if (switch_busid.empty() || link.target < switch_busid) switch_busid = link.target;
      }
    }
    // GPU pairs can be listed from both ends; the ends must agree.
    struct Listed {
      int from_low = 0;   // links as listed by the lower-numbered node
      int from_high = 0;
      const xml::Element* where = nullptr;
    };
    std::map<std::pair<int, int>, Listed> pairs;
    std::map<int, int> to_switch, to_cpu;
    for (const PendingLink& link : links_) {
      const int target = topo_.find_busid(link.target);
      if (class_is(link.tclass, "0x0604")) {
        to_cpu[link.gpu] += link.count;  // POWER9: NVLink to the CPU
      } else if (class_is(link.tclass, "0x0680")) {
        to_switch[link.gpu] += link.count;
      } else if (target >= 0 && topo_.nodes[target].kind == NodeKind::gpu) {
        Listed& listed = pairs[std::make_pair(std::min(link.gpu, target), std::max(link.gpu, target))];
        int& count = link.gpu < target ? listed.from_low : listed.from_high;
        if (count != 0) xml_fail(*link.element, "NVLink to " + link.target + " listed twice");
        count = link.count;
        listed.where = link.element;
      } else if (target >= 0) {
        xml_fail(*link.element, "target " + link.target + " is a " + to_string(topo_.nodes[target].kind) +
                                    ", not a GPU or NVSwitch");
      } else if (class_is(link.tclass, "0x03")) {
        xml_fail(*link.element, "target " + link.target + " is a GPU (tclass " + excerpt(link.tclass) +
                                    ") but no <pci> in the file has that bus id");
      } else {
        to_switch[link.gpu] += link.count;  // no class and not in the file: NCCL takes it for an NVSwitch
      }
    }
    for (const auto& [key, listed] : pairs) {
      if (listed.from_low != 0 && listed.from_high != 0 && listed.from_low != listed.from_high) {
        xml_fail(*listed.where, "the two GPUs disagree on their NVLink count (" + std::to_string(listed.from_low) +
                                    " vs " + std::to_string(listed.from_high) + ")");
      }
      topo_.add_nvlink(key.first, key.second, std::max(listed.from_low, listed.from_high));
    }
    if (!to_switch.empty()) {
      nvswitch = topo_.add_nvswitch(switch_busid);
      for (const auto& [gpu, count] : to_switch) topo_.add_nvlink(gpu, nvswitch, count);
    }
    for (const auto& [gpu, count] : to_cpu) topo_.add_nvlink(gpu, topo_.cpu_of(gpu), count);
  }

  Topology topo_;
  std::vector<PendingGpu> gpus_;
  std::vector<PendingLink> links_;
};
}  // namespace detail

CHORUS_FUNC Topology read_nccl_xml(std::string_view text) {
  Topology topo = detail::XmlBuilder().build(xml::parse(text, detail::kXmlCall));
  topo.source = "NCCL topology XML";
  return topo;
}

CHORUS_FUNC Topology read_nccl_xml_file(const std::string& path) {
  Topology topo = read_nccl_xml(read_text_file(path, detail::kXmlCall));
  topo.source = "NCCL topology XML (" + path + ")";
  return topo;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
