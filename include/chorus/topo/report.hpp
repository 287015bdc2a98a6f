// Text for people: device names, the GPU/NIC matrix in nvidia-smi's own layout (which read_nvsmi
// reads back), and one-line ring descriptions.
#pragma once

#include <string>
#include <vector>

#include "../core/config.hpp"
#include "cpuset.hpp"
#include "path.hpp"
#include "path_class.hpp"
#include "ring_search.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

// "GPU0".."GPUn-1", then each NIC's RDMA name ("mlx5_0"). A NIC whose name is missing, taken by
// an earlier NIC, or unfit for a matrix heading (spaces, a token) is "NIC<k>", as nvidia-smi
// labels NICs, so the names are always distinct single words.
CHORUS_FUNC std::vector<std::string> device_names(const Topology& topo, const PathMatrix& paths);

CHORUS_FUNC std::string format_GBps(double value);

// The matrix as `nvidia-smi topo -m` prints it: tab-separated, " X " on the diagonal, CPU and NUMA
// Affinity columns on GPU rows.
CHORUS_FUNC std::string smi_matrix(const Topology& topo, const PathMatrix& paths);

// "0 -> 3 -> 2 -> 1 -> 0" for a ring order.
CHORUS_FUNC std::string ring_text(const std::vector<int>& order);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo

#if CHORUS_DEFINE_BODIES
#include "report_inl.hpp"
#endif
