// Shared by the topology tests: fixture paths, the hardware each .txt fixture's README entry
// names, and small lookups by device name.
#pragma once

#include <chorus/topo/nccl_xml.hpp>
#include <chorus/topo/nvsmi_reader.hpp>
#include <chorus/topo/path.hpp>
#include <chorus/topo/report.hpp>

#include <string>
#include <vector>

namespace fixtures {

inline std::string path(const std::string& name) { return std::string(CHORUS_FIXTURE_DIR) + "/" + name; }

// The "Reader options" line of each machine in tests/fixtures/topo/README.md.
inline chorus::topo::NvsmiOptions options_for(const std::string& file) {
  using chorus::topo::CpuFamily;
  chorus::topo::NvsmiOptions o;
  if (file.rfind("dgx1-v100", 0) == 0) o = {70, 3, CpuFamily::intel_broadwell};
  if (file.rfind("dgx-a100", 0) == 0) o = {80, 4, CpuFamily::amd};
  if (file.rfind("dgx-h100", 0) == 0) o = {90, 5, CpuFamily::intel_sapphire_rapids};
  if (file.rfind("pcie-8gpu", 0) == 0) o = {80, 4, CpuFamily::amd};
  if (file.rfind("workstation-2gpu", 0) == 0) o = {86, 4, CpuFamily::amd};
  if (file.rfind("box-4gpu", 0) == 0) o = {80, 4, CpuFamily::intel_skylake};
  if (file.rfind("old-driver-soc", 0) == 0) o = {60, 3, CpuFamily::intel_broadwell};
  if (file.rfind("gh200-4gpu", 0) == 0) o = {90, 5, CpuFamily::arm};
  if (file.rfind("rtx4090-8gpu", 0) == 0) o = {89, 4, CpuFamily::amd};
  return o;
}

// Reads a fixture: .xml with the XML reader, .txt with the nvidia-smi reader and the README's options.
inline chorus::topo::Topology load(const std::string& file) {
  if (file.size() > 4 && file.compare(file.size() - 4, 4, ".xml") == 0) {
    return chorus::topo::read_nccl_xml_file(path(file));
  }
  return chorus::topo::read_nvsmi_file(path(file), options_for(file));
}

// Device index (GPUs first, then NICs) of a name such as "GPU3" or "mlx5_2".
inline int index_of(const chorus::topo::Topology& topo, const chorus::topo::PathMatrix& paths,
                    const std::string& name) {
  const std::vector<std::string> names = chorus::topo::device_names(topo, paths);
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    if (names[i] == name) return i;
  }
  return -1;
}

// nvidia-smi token between two named devices ("?" if either is unknown).
inline std::string token(const chorus::topo::Topology& topo, const chorus::topo::PathMatrix& paths,
                         const std::string& a, const std::string& b) {
  const int x = index_of(topo, paths, a);
  const int y = index_of(topo, paths, b);
  if (x < 0 || y < 0) return "?";
  return paths.device(x, y).token.text();
}

inline double bandwidth(const chorus::topo::Topology& topo, const chorus::topo::PathMatrix& paths,
                        const std::string& a, const std::string& b) {
  const int x = index_of(topo, paths, a);
  const int y = index_of(topo, paths, b);
  if (x < 0 || y < 0) return -1;
  return paths.device(x, y).bw_GBps;
}

}  // namespace fixtures
