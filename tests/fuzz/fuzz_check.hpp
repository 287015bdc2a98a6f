// What every fuzzed topology must satisfy once a reader accepted it. A violated property aborts,
// which libFuzzer reports like a crash, with the input saved.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <chorus/topo.hpp>

namespace fuzz {

[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "property violated: %s\n", what);
  std::abort();
}

// Paths, tokens, rings and the two writers on an accepted topology.
inline void exercise(const chorus::topo::Topology& topo) {
  using namespace chorus::topo;
  if (topo.nodes.size() > 300) return;  // valid but large: correct, just slow to search
  const PathMatrix paths(topo);
  for (int a = 0; a < paths.device_count(); ++a) {
    for (int b = 0; b < paths.device_count(); ++b) {
      if (paths.device(a, b).token != paths.device(b, a).token) violated("token matrix not symmetric");
      if ((a == b) != (paths.device(a, b).token.cls == SmiClass::self)) violated("X off the diagonal");
    }
  }
  if (paths.gpu_count() <= 9) {
    const RingPlan plan = search_rings(topo, paths);
    if (paths.gpu_count() > 0 && plan.rings.empty()) violated("no ring over the GPUs");
    double_binary_tree(plan.rings.empty() ? std::vector<int>{} : plan.rings.front().order);
  }
  // NCCL XML round trip: same machine.
  const Topology back = read_nccl_xml(write_nccl_xml(topo));
  if (!same_machine(back, topo)) violated("NCCL XML round trip changed the machine");
  // nvidia-smi matrix round trip: the printed matrix reads back with the same tokens. A GPU with
  // more direct NVLinks than any GPU has prints like an NVSwitch member, which the text cannot tell
  // apart, so such (impossible) machines are left out.
  std::vector<int> direct(topo.nodes.size(), 0);
  for (const NvLinkBond& bond : topo.nvlinks) {
    if (topo.nodes[bond.a].kind == NodeKind::gpu && topo.nodes[bond.b].kind == NodeKind::gpu) {
      direct[bond.a] += bond.count;
      direct[bond.b] += bond.count;
    }
  }
  const bool printable = std::all_of(direct.begin(), direct.end(), [](int n) { return n <= kMaxNvlinksPerGpu; });
  if (printable && paths.gpu_count() > 0 && paths.device_count() <= kMaxNvsmiDevices) {
    const PathMatrix again(read_nvsmi(smi_matrix(topo, paths)));
    if (again.device_count() != paths.device_count()) violated("printed matrix lost devices");
    for (int a = 0; a < paths.device_count(); ++a) {
      for (int b = 0; b < paths.device_count(); ++b) {
        if (again.device(a, b).token != paths.device(a, b).token) violated("printed matrix reads back differently");
      }
    }
  }
}

}  // namespace fuzz
