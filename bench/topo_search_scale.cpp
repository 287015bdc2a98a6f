// topo-search-scale N...: times PathMatrix and search_rings on the synthetic N-GPU PCIe machine
// of the scaling test (tests/topo/pcie_farm.hpp). The ring search's speed is checked by this
// measurement, not by a timed test (docs/topology.md has the figures).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <chorus/topo/ring_search.hpp>

#include "../../tests/topo/pcie_farm.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s GPUS...\n", argv[0]);
    return 2;
  }
  using clock = std::chrono::steady_clock;
  const auto seconds = [](clock::time_point since) {
    return std::chrono::duration<double>(clock::now() - since).count();
  };
  for (int i = 1; i < argc; ++i) {
    const int gpus = std::atoi(argv[i]);
    if (gpus < 1 || gpus > 4096) {
      std::fprintf(stderr, "%s: GPUS must be 1..4096, got '%s'\n", argv[0], argv[i]);
      return 2;
    }
    const chorus::topo::Topology topo = fixtures::pcie_farm(gpus);
    auto start = clock::now();
    const chorus::topo::PathMatrix paths(topo);
    const double path_s = seconds(start);
    start = clock::now();
    const chorus::topo::RingPlan plan = chorus::topo::search_rings(topo, paths);
    const double search_s = seconds(start);
    std::printf("%d GPUs: paths %.2f s, search %.2f s, %zu channel(s) at %.1f GB/s, bottleneck %.1f GB/s%s\n", gpus,
                path_s, search_s, plan.rings.size(), plan.channel_GBps, plan.rings.front().bottleneck_GBps,
                plan.exact ? ", exact" : plan.budget_spent ? ", heuristic (work budget reached)" : ", heuristic");
  }
  return 0;
}
