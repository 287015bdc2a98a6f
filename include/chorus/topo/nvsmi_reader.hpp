// Builds a Topology from `nvidia-smi topo -m`. The matrix says how far apart each pair is, not
// how the machine is wired, so the reader derives the simplest PCIe tree that prints the same
// matrix, and checks that it does (an inconsistent matrix is an error, not a guess):
//   - NUMA nodes: devices joined by PIX/PXB/PHB/NODE share one, as do GPUs with the same NUMA
//     (or CPU) Affinity. A pair joined by NVLink hides its PCIe relation; such groups are merged
//     into one NUMA node unless a SYS entry or the affinity columns keep them apart. Where the
//     matrix and the affinity columns disagree the matrix wins, with a warning: drivers print
//     such output (an 8x RTX 4090 server shows every pair SYS, GPUs of one NUMA node included),
//     and the matrix is what the tree must reproduce.
//   - within a NUMA node, PIX/PXB/PHB pairs share a host bridge; PIX/PXB pairs a top switch;
//     PIX pairs one switch below it. A device alone on its host bridge hangs directly off the CPU.
//   - NV<k>: k bonded links between the pair. When a GPU's links add up to more than any GPU has
//     (18), the GPUs must reach each other through NVSwitches: k links from each to the fabric.
// The matrix does not say which GPUs, CPUs or PCIe generation a machine has. Unless the caller
// says (NvsmiOptions), the GPU generation is guessed from the NVLink count per GPU (18 Hopper,
// 12 Ampere, 5 or 6 Volta, 1-4 Pascal's DGX-1 pattern, NVLink bridges: see infer_sm), the PCIe
// generation is the one that generation shipped with, and the CPU is the one NVIDIA's DGX of that
// generation uses (DGX-1: Broadwell, DGX A100: AMD Rome, DGX H100: Sapphire Rapids).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "bandwidth.hpp"
#include "cpuset.hpp"
#include "nvsmi_parser.hpp"
#include "path.hpp"
#include "text_file.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct NvsmiOptions {
  int sm = 0;                          // GPU compute capability (80 = A100); 0 = infer
  int pcie_generation = 0;             // 0 = typical for the GPU generation
  CpuFamily cpu = CpuFamily::unknown;  // unknown = the DGX CPU of the GPU generation
};

// No GPU has more NVLinks than this (H100, B200: 18).
constexpr int kMaxNvlinksPerGpu = 18;

// Guesses the GPU generation from the most NVLinks any GPU has (to peers or to the NVSwitch
// fabric): 18 H100 (SM90), 12 A100 (SM80), 5-6 V100 (SM70), 1-4 the P100 DGX-1 or a PCIe card
// pair with an NVLink bridge (SM70: the per-link figure of V100 and A100, 20 GB/s), 0 unknown.
inline int infer_sm(int max_links_per_gpu) {
  if (max_links_per_gpu >= 18) return 90;
  if (max_links_per_gpu >= 12) return 80;
  if (max_links_per_gpu >= 1) return 70;
  return 0;
}

// The CPU a DGX of that GPU generation ships with.
inline CpuFamily typical_cpu_family(int sm) {
  if (sm >= 100) return CpuFamily::intel_emerald_rapids;
  if (sm >= 90) return CpuFamily::intel_sapphire_rapids;
  if (sm >= 80) return CpuFamily::amd;
  if (sm >= 60) return CpuFamily::intel_broadwell;
  return CpuFamily::unknown;
}

// CPU attributes (as /proc/cpuinfo and NCCL's XML spell them) of a representative of a family.
inline CpuInfo representative_cpu(CpuFamily family) {
  CpuInfo cpu;
  cpu.arch = "x86_64";
  switch (family) {
    case CpuFamily::intel_broadwell: cpu.vendor = "GenuineIntel", cpu.family_id = 6, cpu.model_id = 79; break;
    case CpuFamily::intel_skylake: cpu.vendor = "GenuineIntel", cpu.family_id = 6, cpu.model_id = 85; break;
    case CpuFamily::intel_sapphire_rapids: cpu.vendor = "GenuineIntel", cpu.family_id = 6, cpu.model_id = 143; break;
    case CpuFamily::intel_emerald_rapids: cpu.vendor = "GenuineIntel", cpu.family_id = 6, cpu.model_id = 207; break;
    case CpuFamily::amd: cpu.vendor = "AuthenticAMD", cpu.family_id = 23, cpu.model_id = 49; break;
    case CpuFamily::zhaoxin: cpu.vendor = "CentaurHauls", cpu.family_id = 7, cpu.model_id = 59; break;
    case CpuFamily::power9: cpu.arch = "ppc64"; break;
    case CpuFamily::arm: cpu.arch = "arm64"; break;
    case CpuFamily::unknown: break;
  }
  return cpu;
}

// Warnings (the matrix overruling the affinity columns) go to `warnings` when given, else to the
// log (CHORUS_LOG=warn, the default).
CHORUS_FUNC Topology topology_from_matrix(const NvsmiMatrix& m, const NvsmiOptions& options = {},
                                          std::vector<std::string>* warnings = nullptr);

CHORUS_FUNC Topology read_nvsmi(std::string_view text, const NvsmiOptions& options = {},
                                std::vector<std::string>* warnings = nullptr);

CHORUS_FUNC Topology read_nvsmi_file(const std::string& path, const NvsmiOptions& options = {},
                                     std::vector<std::string>* warnings = nullptr);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "nvsmi_reader_inl.hpp"
#endif
