// The two vocabularies for "how far apart are two devices":
//   nvidia-smi topo -m tokens  X, NV<k>, PIX, PXB, PHB, NODE, SYS   (what people read), and
//   NCCL path types            LOC, NVL, NVB, PIX, PXB, PHB, SYS, NET (what NCCL_P2P_LEVEL takes).
// They differ in two places: nvidia-smi splits NCCL's PHB into PHB (one host bridge) and NODE
// (two host bridges of one NUMA node), and NCCL has NVB (NVLink through a third GPU), which
// nvidia-smi shows as the PCIe token of the pair. Legend from nvidia-smi's own text:
//   X    = Self
//   SYS  = PCIe + the SMP interconnect between NUMA nodes (QPI/UPI); old drivers print SOC
//   NODE = PCIe + the interconnect between PCIe host bridges within a NUMA node
//   PHB  = PCIe + a PCIe host bridge (typically the CPU)
//   PXB  = multiple PCIe bridges, without traversing the host bridge
//   PIX  = at most a single PCIe bridge
//   NV#  = a bonded set of # NVLinks
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// NCCL's path types, best first (NCCL also has C2C, P2C and PXN for Grace and rail setups;
// chorus does not model those yet).
enum class PathType { loc, nvl, nvb, pix, pxb, phb, sys, net, dis };

inline const char* to_string(PathType type) {
  switch (type) {
    case PathType::loc: return "LOC";
    case PathType::nvl: return "NVL";
    case PathType::nvb: return "NVB";
    case PathType::pix: return "PIX";
    case PathType::pxb: return "PXB";
    case PathType::phb: return "PHB";
    case PathType::sys: return "SYS";
    case PathType::net: return "NET";
    case PathType::dis: return "DIS";
  }
  return "?";
}

inline std::optional<PathType> parse_path_type(std::string_view name) {
  for (PathType type : {PathType::loc, PathType::nvl, PathType::nvb, PathType::pix, PathType::pxb, PathType::phb,
                        PathType::sys, PathType::net, PathType::dis}) {
    if (name == to_string(type)) return type;
  }
  return std::nullopt;
}

// The worse (slower, farther) of two path types.
inline PathType worse(PathType a, PathType b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

enum class SmiClass { self, nvlink, pix, pxb, phb, node, sys };

// One cell of nvidia-smi's matrix. `nvlinks` counts the bonded links for NV<k> and is 0 otherwise.
struct SmiToken {
  SmiClass cls = SmiClass::sys;
  int nvlinks = 0;

  std::string text() const {
    switch (cls) {
      case SmiClass::self: return "X";
      case SmiClass::nvlink: return "NV" + std::to_string(nvlinks);
      case SmiClass::pix: return "PIX";
      case SmiClass::pxb: return "PXB";
      case SmiClass::phb: return "PHB";
      case SmiClass::node: return "NODE";
      case SmiClass::sys: return "SYS";
    }
    return "?";
  }
  friend bool operator==(const SmiToken& a, const SmiToken& b) { return a.cls == b.cls && a.nvlinks == b.nvlinks; }
  friend bool operator!=(const SmiToken& a, const SmiToken& b) { return !(a == b); }
};

// Parses one cell as nvidia-smi prints it; SOC (drivers before ~2017) means SYS. NV needs a
// count from 1 to 999.
inline std::optional<SmiToken> parse_smi_token(std::string_view text) {
  if (text == "X") return SmiToken{SmiClass::self, 0};
  if (text == "PIX") return SmiToken{SmiClass::pix, 0};
  if (text == "PXB") return SmiToken{SmiClass::pxb, 0};
  if (text == "PHB") return SmiToken{SmiClass::phb, 0};
  if (text == "NODE") return SmiToken{SmiClass::node, 0};
  if (text == "SYS" || text == "SOC") return SmiToken{SmiClass::sys, 0};
  if (text.size() >= 3 && text.size() <= 5 && text.substr(0, 2) == "NV") {
    int count = 0;
    for (char c : text.substr(2)) {
      if (c < '0' || c > '9') return std::nullopt;
      count = count * 10 + (c - '0');
    }
    if (count >= 1 && count <= 999) return SmiToken{SmiClass::nvlink, count};
  }
  return std::nullopt;
}

// The NCCL type nvidia-smi's token corresponds to (NODE folds into PHB, NV<k> is NVL).
inline PathType nccl_type(const SmiToken& token) {
  switch (token.cls) {
    case SmiClass::self: return PathType::loc;
    case SmiClass::nvlink: return PathType::nvl;
    case SmiClass::pix: return PathType::pix;
    case SmiClass::pxb: return PathType::pxb;
    case SmiClass::phb:
    case SmiClass::node: return PathType::phb;
    case SmiClass::sys: return PathType::sys;
  }
  return PathType::dis;
}

// Whether `word` can name a NIC column of the matrix: one word of printable characters, not a
// matrix token, not a heading word (CPU, NUMA, GPU, ...), not a GPU label, no '=' or ':'.
inline bool is_nic_name(std::string_view word) {
  if (word.empty() || word.size() > 64 || parse_smi_token(word)) return false;
  for (const char c : word) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '=' || c == ':' || c == 0x7f) return false;
  }
  if (word == "CPU" || word == "NUMA" || word == "Affinity" || word == "ID" || word == "Legend:") return false;
  return word.substr(0, 3) != "GPU";
}

// PCIe distance rank used when deriving a tree from a matrix: PIX < PXB < PHB < NODE < SYS.
inline int pcie_level(SmiClass cls) {
  switch (cls) {
    case SmiClass::pix: return 1;
    case SmiClass::pxb: return 2;
    case SmiClass::phb: return 3;
    case SmiClass::node: return 4;
    case SmiClass::sys: return 5;
    default: return 0;
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
