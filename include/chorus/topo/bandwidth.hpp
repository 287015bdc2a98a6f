// Published per-link figures, in GB/s (1e9 bytes/s, one direction) and microseconds.
//
// Every number is NCCL's own model constant (src/graph/topo.h and tuning.cc of NVIDIA/nccl
// v2.30.7-1; docs/references.md lists every source), so a chorus ring and an NCCL ring
// on the same machine are judged with the same yardstick:
//   NVLink per link by GPU generation (SM): SM60 18, SM70 20, SM80 20, SM86 12, SM90 20.6,
//     SM100 40.1; a GPU pair or GPU-NVSwitch connection multiplies this by its link count
//     (A100: 12 x 20 = 240; H100/H200: 18 x 20.6 = 370.8, matching nccl-tests#256).
//   PCIe: width * lane / 80 with lane = 15/30/60/120/240/480 for 2.5/5/8/16/32/64 GT/s, so x16
//     is 12 (Gen3), 24 (Gen4), 48 (Gen5), 96 (Gen6).
//   Between CPU sockets: Broadwell (and older Intel) 6, Skylake 10, Sapphire Rapids 22,
//     Emerald Rapids 40, AMD 16, Zhaoxin 6 (9 on newer models), POWER9 32, ARM 6.
//   Local (a GPU to itself) 5000; a NIC of unknown speed 12 (100 Gb/s).
// Latencies are NCCL's per-hop LL-protocol figures for rings: NVLink 0.6 us, PCIe 1.0 us,
// network 2.7 us. NCCL has no separate socket-link figure; chorus charges it like a PCIe hop.
#pragma once
#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

constexpr double kLocalGBps = 5000.0;
constexpr double kDefaultNicGBps = 12.0;
constexpr double kNvlinkLatencyUs = 0.6;
constexpr double kPcieLatencyUs = 1.0;
constexpr double kInterCpuLatencyUs = 1.0;
constexpr double kNetworkLatencyUs = 2.7;

// Bandwidth of one NVLink for a GPU of compute capability `sm` (major*10 + minor, e.g. 80).
// sm 0 means unknown and gets the V100/A100 figure, the most common one.
inline double nvlink_link_GBps(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86) return 12.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;
}

// Per-lane rate in NCCL's units for a signalling rate in GT/s; 0 for a rate PCIe does not define.
inline double pcie_lane_units(double gts) {
  if (gts >= 63.0) return 480.0;
  if (gts >= 31.0) return 240.0;
  if (gts >= 15.0) return 120.0;
  if (gts >= 7.5) return 60.0;
  if (gts >= 4.5) return 30.0;
  if (gts >= 2.0) return 15.0;
  return 0.0;
}

// A PCIe link of `width` lanes at `gts` GT/s. Unknown speed or width gives 0: the caller decides
// the default, because a missing figure in a file is not the same as a slow link.
inline double pcie_GBps(double gts, int width) {
  if (width <= 0) return 0.0;
  return width * pcie_lane_units(gts) / 80.0;
}

// The signalling rate of PCIe generation 1..6 in GT/s (0 for anything else).
inline double pcie_gen_gts(int generation) {
  switch (generation) {
    case 1: return 2.5;
    case 2: return 5.0;
    case 3: return 8.0;
    case 4: return 16.0;
    case 5: return 32.0;
    case 6: return 64.0;
    default: return 0.0;
  }
}

// The CPU families NCCL tells apart when it prices the link between sockets.
enum class CpuFamily {
  unknown,
  intel_broadwell,  // and every Intel server CPU before Skylake
  intel_skylake,    // Skylake-SP up to Ice Lake-SP
  intel_sapphire_rapids,
  intel_emerald_rapids,  // and later
  amd,
  zhaoxin,
  power9,
  arm,
};

inline const char* to_string(CpuFamily family) {
  switch (family) {
    case CpuFamily::unknown: return "unknown";
    case CpuFamily::intel_broadwell: return "Intel Broadwell";
    case CpuFamily::intel_skylake: return "Intel Skylake";
    case CpuFamily::intel_sapphire_rapids: return "Intel Sapphire Rapids";
    case CpuFamily::intel_emerald_rapids: return "Intel Emerald Rapids";
    case CpuFamily::amd: return "AMD";
    case CpuFamily::zhaoxin: return "Zhaoxin";
    case CpuFamily::power9: return "POWER9";
    case CpuFamily::arm: return "ARM";
  }
  return "unknown";
}

// Unknown CPUs get the lowest figure (6): underestimating a socket link only makes the search
// avoid it harder, which is what a socket link deserves anyway.
inline double inter_cpu_GBps(CpuFamily family, int model = 0) {
  switch (family) {
    case CpuFamily::intel_broadwell: return 6.0;
    case CpuFamily::intel_skylake: return 10.0;
    case CpuFamily::intel_sapphire_rapids: return 22.0;
    case CpuFamily::intel_emerald_rapids: return 40.0;
    case CpuFamily::amd: return 16.0;
    case CpuFamily::zhaoxin: return model >= 0x5b ? 9.0 : 6.0;
    case CpuFamily::power9: return 32.0;
    case CpuFamily::arm: return 6.0;
    case CpuFamily::unknown: return 6.0;
  }
  return 6.0;
}

// Classifies a CPU from what /proc/cpuinfo and NCCL's XML record (arch, vendor, family, model).
// Intel family 6 model numbers: Skylake-SP 0x55, Sapphire Rapids 0x8F, Emerald Rapids 0xCF.
inline CpuFamily classify_cpu(const char* arch, const char* vendor, int family, int model) {
  const auto starts = [](const char* text, const char* prefix) {
    if (text == nullptr) return false;
    while (*prefix != '\0') {
      if (*text++ != *prefix++) return false;
    }
    return true;
  };
  if (starts(arch, "ppc")) return CpuFamily::power9;
  if (starts(arch, "arm") || starts(arch, "aarch")) return CpuFamily::arm;
  if (starts(vendor, "GenuineIntel")) {
    if (family != 6) return CpuFamily::intel_broadwell;
    if (model >= 0xCF) return CpuFamily::intel_emerald_rapids;
    if (model >= 0x8F) return CpuFamily::intel_sapphire_rapids;
    if (model >= 0x55) return CpuFamily::intel_skylake;
    return CpuFamily::intel_broadwell;
  }
  if (starts(vendor, "AuthenticAMD") || starts(vendor, "HygonGenuine")) return CpuFamily::amd;
  if (starts(vendor, "CentaurHauls") || starts(vendor, "  Shanghai  ")) return CpuFamily::zhaoxin;
  (void)model;
  return CpuFamily::unknown;
}

// The most widespread PCIe generation for GPUs of compute capability `sm`: V100 Gen3, A100 Gen4,
// H100 and later Gen5. Used only when a source (nvidia-smi's matrix) does not say.
inline int typical_pcie_generation(int sm) {
  if (sm >= 90) return 5;
  if (sm >= 80) return 4;
  return 3;
}

// NCCL's search never runs one channel faster than the top of its speed ladder: 40 GB/s before
// Hopper, 60 on SM90, 90 on SM100. chorus uses the same cap when it counts channels.
inline double max_channel_GBps(int sm) {
  if (sm >= 100) return 90.0;
  if (sm >= 90) return 60.0;
  return 40.0;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
