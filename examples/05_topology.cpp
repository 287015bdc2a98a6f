// Example 05: what the machine's wiring means for a ring, on six real machines.
//
// A ring all-reduce moves every byte over every hop of the ring, so it runs at the speed of its
// slowest hop. Which GPU talks to which is therefore the one choice that matters, and it depends
// on how the machine is wired: NVLink pairs, an NVSwitch, PCIe switches, two CPU sockets.
//
// For each machine (read from tests/fixtures/topo: `nvidia-smi topo -m` text or NCCL's topology
// XML) this program prints the GPU matrix in nvidia-smi's tokens, the best ring chorus finds, its
// hop bandwidths, and why that ring is the best one: what it uses, what it avoids, and what the
// naive order 0, 1, ..., n-1 would cost. Then it builds the ring all_reduce schedule over the
// DGX-1's best ring and shows that every step talks to an NVLink neighbour.
//
// Usage: 05_topology [fixture directory]. Exits non-zero if a ring is not what the fixtures'
// README says it must be.
#include <chorus/algo/build.hpp>
#include <chorus/algo/printer.hpp>
#include <chorus/algo/verifier.hpp>
#include <chorus/topo.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace algo = chorus::algo;
namespace topo = chorus::topo;

#ifndef CHORUS_FIXTURE_DIR
#define CHORUS_FIXTURE_DIR "tests/fixtures/topo"
#endif

namespace {

struct Machine {
  const char* title;
  const char* file;
  topo::NvsmiOptions options;  // the hardware behind a .txt file (a .xml file says it itself)
  std::vector<int> expected_ring;
  double expected_bottleneck;
};

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("  UNEXPECTED: %s\n", what.c_str());
    ++failures;
  }
}

std::string gbps(double value) { return topo::format_GBps(value) + " GB/s"; }

topo::Topology load(const std::string& dir, const Machine& m) {
  const std::string path = dir + "/" + m.file;
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".xml") == 0) return topo::read_nccl_xml_file(path);
  return topo::read_nvsmi_file(path, m.options);
}

void print_matrix(const topo::PathMatrix& paths) {
  std::printf("       ");
  for (int b = 0; b < paths.gpu_count(); ++b) std::printf("GPU%-3d", b);
  std::printf("\n");
  for (int a = 0; a < paths.gpu_count(); ++a) {
    std::printf("  GPU%d ", a);
    for (int b = 0; b < paths.gpu_count(); ++b) std::printf("%-6s", paths.gpu(a, b).token.text().c_str());
    std::printf("\n");
  }
}

// Why the ring is best, in numbers taken from the topology itself.
void explain(const topo::PathMatrix& paths, const std::vector<int>& ring) {
  const int n = static_cast<int>(ring.size());
  const std::vector<double> hops = topo::ring_hops(paths, ring);
  int nvlink = 0, socket = 0;
  for (int i = 0; i < n; ++i) {
    const topo::Path& path = paths.gpu(ring[i], ring[(i + 1) % n]);
    nvlink += path.type == topo::PathType::nvl || path.type == topo::PathType::nvb;
    socket += path.type == topo::PathType::sys;
  }
  std::printf("  hops:");
  for (int i = 0; i < n; ++i) {
    const topo::Path& path = paths.gpu(ring[i], ring[(i + 1) % n]);
    std::printf(" %d->%d %s %s;", ring[i], ring[(i + 1) % n], path.token.text().c_str(), gbps(hops[i]).c_str());
  }
  std::printf("\n  %d of %d hops on NVLink, %d across the CPU sockets.\n", nvlink, n, socket);
  // Is every pair alike? Then any order is optimal, and the search keeps the plain one.
  bool uniform = true;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b && paths.gpu(a, b).bw_GBps != paths.gpu(0, 1).bw_GBps) uniform = false;
    }
  }
  if (n == 2) {
    std::printf("  Two GPUs make one ring: 0 -> 1 and back. The two hops run in opposite directions of the\n"
                "  same %s connection, so neither slows the other.\n",
                paths.gpu(0, 1).token.text().c_str());
    return;
  }
  if (uniform) {
    std::printf("  Every GPU pair is alike (%s), so every ring is equally good: the fabric, not the order,\n"
                "  sets the speed, and the search keeps 0, 1, ..., n-1.\n",
                paths.gpu(0, 1).token.text().c_str());
    return;
  }
  std::vector<int> naive(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) naive[i] = i;
  const std::vector<double> naive_hops = topo::ring_hops(paths, naive);
  const double naive_weakest = *std::min_element(naive_hops.begin(), naive_hops.end());
  const double weakest = *std::min_element(hops.begin(), hops.end());
  if (naive == ring) {
    std::printf("  The plain order 0, 1, ..., n-1 is already optimal here.\n");
  } else {
    std::printf("  The plain order 0, 1, ..., n-1 would bottleneck at %s; this ring at %s.\n",
                gbps(naive_weakest).c_str(), gbps(weakest).c_str());
  }
  if (socket > 0) {
    std::printf("  A ring over both sockets must cross between them at least twice; this one does it exactly\n"
                "  %d times, once in each direction, so the two crossings do not share the socket link.\n",
                socket);
  }
}

void show_machine(const std::string& dir, const Machine& m) {
  std::printf("\n=== %s (%s)\n", m.title, m.file);
  const topo::Topology machine = load(dir, m);
  const topo::PathMatrix paths(machine);
  print_matrix(paths);
  const topo::RingPlan plan = topo::search_rings(machine, paths);
  const topo::Ring& best = plan.rings.front();
  std::printf("  best ring: %s   bottleneck %s\n", topo::ring_text(best.order).c_str(),
              gbps(best.bottleneck_GBps).c_str());
  explain(paths, best.order);
  std::printf("  %zu ring(s) fit side by side at %s each (NCCL would call them channels).\n", plan.rings.size(),
              gbps(plan.channel_GBps).c_str());
  expect(best.order == m.expected_ring, "best ring differs from the README's");
  expect(std::abs(best.bottleneck_GBps - m.expected_bottleneck) < 1e-6, "bottleneck differs from the README's");
}

// The ring all_reduce over the DGX-1's best ring: every step's peer is an NVLink neighbour.
void show_schedule(const std::string& dir) {
  std::printf("\n=== A ring all_reduce laid on the DGX-1's best ring\n");
  const topo::Topology machine = topo::read_nccl_xml_file(dir + "/dgx1-v100.xml");
  const topo::PathMatrix paths(machine);
  algo::Options options;
  options.ring_order = topo::best_ring_order(machine);
  const algo::Schedule schedule = algo::build(algo::Collective::all_reduce, algo::Pattern::ring, paths.gpu_count(),
                                              16, 0, options);
  const algo::Verdict verdict = algo::verify(schedule);
  std::printf("  %s; verified: %s\n", algo::summary(schedule).c_str(), verdict.ok ? "yes" : verdict.problem.c_str());
  expect(verdict.ok, "the schedule does not verify");
  std::printf("  rank 0's first steps, with the link each one uses:\n");
  std::set<int> peers;
  for (std::size_t i = 0; i < schedule.steps[0].size(); ++i) {
    const algo::Step& step = schedule.steps[0][i];
    peers.insert(step.peer);
    if (i >= 6) continue;
    const topo::Path& link = paths.gpu(0, step.peer);
    std::printf("    %-46s %s, %s\n", algo::describe(step).c_str(), link.token.text().c_str(),
                gbps(link.bw_GBps).c_str());
  }
  std::string with;
  for (int peer : peers) with += (with.empty() ? "rank " : " or rank ") + std::to_string(peer);
  std::printf("    ... %zu steps in all, every one with %s\n", schedule.steps[0].size(), with.c_str());
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    for (const algo::Step& step : schedule.steps[rank]) {
      if (step.peer >= 0) expect(paths.gpu(rank, step.peer).bw_GBps >= 40.0, "a step leaves the NV2 ring");
    }
  }
  std::printf("  Every rank only ever talks to its two ring neighbours, and on this ring both are NV2 (40 GB/s)\n"
              "  away. With the plain rank order 0..7 the ring would include NV1 hops (20 GB/s), and pairs\n"
              "  such as 3 -> 4 that have no NVLink of their own.\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : CHORUS_FIXTURE_DIR;
  using topo::CpuFamily;
  const Machine machines[] = {
      {"DGX-1 V100: hybrid cube-mesh", "dgx1-v100.txt", {70, 3, CpuFamily::intel_broadwell},
       {0, 3, 2, 1, 5, 6, 7, 4}, 40.0},
      {"DGX A100: NVSwitch", "dgx-a100.xml", {}, {0, 1, 2, 3, 4, 5, 6, 7}, 240.0},
      {"DGX H100: NVSwitch", "dgx-h100.xml", {}, {0, 1, 2, 3, 4, 5, 6, 7}, 370.8},
      {"8 PCIe GPUs, two sockets", "pcie-8gpu-2socket.xml", {}, {0, 1, 2, 3, 4, 5, 6, 7}, 16.0},
      {"Workstation: 2 GPUs and an NVLink bridge", "workstation-2gpu-nvlink.xml", {}, {0, 1}, 48.0},
      {"4 GPUs in two NVLink pairs", "box-4gpu-nvlink-pairs.xml", {}, {0, 1, 2, 3}, 10.0},
  };

  try {
    for (const Machine& m : machines) show_machine(dir, m);
    show_schedule(dir);
  } catch (const std::exception& e) {
    std::printf("error: %s\n(run from the source tree, or pass the fixture directory)\n", e.what());
    return 1;
  }
  if (failures != 0) std::printf("\n%d unexpected result(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
