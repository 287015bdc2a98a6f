// Parses the text of `nvidia-smi topo -m` into its matrix, in every form drivers print it:
// tab- or space-separated, with or without terminal colour codes, with NIC columns named after
// the device (mlx5_0) or numbered (NIC0, resolved through the "NIC Legend"), with or without the
// CPU Affinity / NUMA Affinity / GPU NUMA ID columns, with or without a legend, and with old
// drivers' SOC for SYS. NUMA Affinity is a list of NUMA nodes: one number on most machines, but
// Grace Hopper lists the CPU's node and the GPU memory's nodes ("0,5-11"). Anything else is a
// chorus::Error naming the line and what was expected.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "cpuset.hpp"
#include "path_class.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// Rejects absurd inputs before they cost memory and time: the matrix is devices^2 cells. Real
// outputs have a few dozen columns (8 GPUs and 12 NICs on a DGX H100).
constexpr int kMaxNvsmiDevices = 256;

struct NvsmiMatrix {
  int gpus = 0;                    // devices 0..gpus-1 are GPU0..; the rest are NICs
  std::vector<std::string> names;  // column names as resolved: "GPU0", ..., "mlx5_0"
  std::vector<std::string> labels; // column names as printed: "GPU0", ..., "NIC0"
  // cells[i][j]; nullopt where no row gave it (a NIC row the output left out).
  std::vector<std::vector<std::optional<SmiToken>>> cells;
  std::vector<int> row_line;       // 1-based line of each device's row; 0 if absent
  std::vector<std::string> cpu_affinity;  // per GPU, as printed ("0-19,40-59"); empty if absent/N/A
  std::vector<std::string> numa_affinity_list;  // per GPU, as printed ("0,5-11"); empty if absent/N/A
  std::vector<int> numa_affinity;  // per GPU: the lowest node of its list (the CPU's); -1 if absent/N/A
  std::vector<int> gpu_numa_id;    // per GPU: the node of its own memory (Grace Hopper); -1 if absent/N/A
  bool has_cpu_affinity = false;
  bool has_numa_affinity = false;

  int devices() const { return static_cast<int>(names.size()); }
};

namespace detail {
// The error every nvidia-smi reading problem throws, naming the line when there is one (0: none).
CHORUS_FUNC Error nvsmi_error(int line, const std::string& what);
}  // namespace detail

CHORUS_FUNC NvsmiMatrix parse_nvsmi(std::string_view text);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "nvsmi_parser_inl.hpp"
#endif
