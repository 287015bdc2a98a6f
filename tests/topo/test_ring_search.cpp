#include <catch2/catch.hpp>

#include "support/sanitizers.hpp"

#include <chorus/topo/ring_search.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "pcie_farm.hpp"

namespace test_ring_search {

using namespace chorus::topo;

namespace {
// Every directed ring through GPU 0, by brute force: the best quality and how many rings reach it.
struct BruteForce {
  std::vector<double> best;
  int optimal_directed = 0;
};

BruteForce brute_force(const PathMatrix& paths) {
  BruteForce out;
  const int n = paths.gpu_count();
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  do {
    const std::vector<double> q = ring_quality(paths, order);
    if (out.optimal_directed == 0 || ring_better(q, out.best)) {
      out.best = q;
      out.optimal_directed = 1;
    } else if (!ring_better(out.best, q)) {
      ++out.optimal_directed;
    }
  } while (std::next_permutation(order.begin() + 1, order.end()));
  return out;
}

const char* const kFixtures[] = {"dgx1-v100.txt",          "dgx1-v100.xml",
                                 "dgx-a100.txt",           "dgx-a100.xml",
                                 "dgx-h100.txt",           "dgx-h100.xml",
                                 "pcie-8gpu-2socket.txt",  "pcie-8gpu-2socket.xml",
                                 "workstation-2gpu-nvlink.txt", "workstation-2gpu-nvlink.xml",
                                 "box-4gpu-nvlink-pairs.txt",   "box-4gpu-nvlink-pairs.xml",
                                 "old-driver-soc.txt",     "no-gpu-element.xml",
                                 "xml-comments.xml",       "link-speed-forms.xml"};
}  // namespace

TEST_CASE("the search finds the best ring on every fixture, checked over all rings", "[topo][ring]") {
  for (const char* file : kFixtures) {
    INFO(file);
    const Topology topo = fixtures::load(file);
    const PathMatrix paths(topo);
    const RingPlan plan = search_rings(topo, paths);
    REQUIRE_FALSE(plan.rings.empty());
    CHECK(plan.exact);
    const BruteForce truth = brute_force(paths);
    CHECK(ring_quality(paths, plan.rings.front().order) == truth.best);
    CHECK(plan.rings.front().order.front() == 0);
  }
}

TEST_CASE("the number of optimal rings matches the README's count", "[topo][ring]") {
  struct Count {
    const char* file;
    int undirected;  // up to rotation and reflection
  };
  for (const Count c : {Count{"dgx1-v100.xml", 1}, Count{"pcie-8gpu-2socket.xml", 32}, Count{"no-gpu-element.xml", 288},
                        Count{"box-4gpu-nvlink-pairs.xml", 2}, Count{"dgx-a100.xml", 2520},
                        Count{"dgx-h100.txt", 2520}}) {
    INFO(c.file);
    const Topology topo = fixtures::load(c.file);
    const BruteForce truth = brute_force(PathMatrix(topo));
    CHECK(truth.optimal_directed == 2 * c.undirected);
  }
}

TEST_CASE("channels: a ring and its reverse on the cube-mesh, many on NVSwitch, one on PCIe", "[topo][ring]") {
  const RingPlan dgx1 = search_rings(fixtures::load("dgx1-v100.xml"));
  REQUIRE(dgx1.rings.size() == 2);
  CHECK(dgx1.channel_GBps == 40.0);
  std::vector<int> reverse = dgx1.rings[0].order;
  std::reverse(reverse.begin() + 1, reverse.end());
  CHECK(dgx1.rings[1].order == reverse);

  const RingPlan a100 = search_rings(fixtures::load("dgx-a100.xml"));
  CHECK(a100.channel_GBps == 40.0);  // NCCL's pre-Hopper per-channel ceiling
  CHECK(a100.rings.size() == 6);     // 240 / 40
  CHECK(a100.total_GBps() == Approx(240.0));

  const RingPlan h100 = search_rings(fixtures::load("dgx-h100.xml"));
  CHECK(h100.channel_GBps == 60.0);
  CHECK(h100.rings.size() == 6);  // 370.8 / 60

  const RingPlan pcie = search_rings(fixtures::load("pcie-8gpu-2socket.xml"));
  CHECK(pcie.rings.size() == 1);  // the socket link is used up in both directions
  CHECK(pcie.channel_GBps == 16.0);

  RingSearchOptions capped;
  capped.max_channels = 3;
  CHECK(search_rings(fixtures::load("dgx-a100.xml"), capped).rings.size() == 3);
  capped.channel_cap_GBps = 240;
  CHECK(search_rings(fixtures::load("dgx-a100.xml"), capped).rings.size() == 1);
}

TEST_CASE("the search is deterministic", "[topo][ring]") {
  for (const char* file : kFixtures) {
    INFO(file);
    const Topology topo = fixtures::load(file);
    const RingPlan a = search_rings(topo);
    const RingPlan b = search_rings(fixtures::load(file));
    REQUIRE(a.rings.size() == b.rings.size());
    for (std::size_t i = 0; i < a.rings.size(); ++i) CHECK(a.rings[i].order == b.rings[i].order);
    CHECK(best_ring_order(topo) == a.rings.front().order);
  }
}

TEST_CASE("the heuristic reaches the optimum on the fixture machines", "[topo][ring]") {
  RingSearchOptions heuristic;
  heuristic.exact_limit = 0;
  for (const char* file : kFixtures) {
    INFO(file);
    const Topology topo = fixtures::load(file);
    const PathMatrix paths(topo);
    const RingPlan plan = search_rings(topo, paths, heuristic);
    CHECK_FALSE(plan.exact);
    CHECK(ring_quality(paths, plan.rings.front().order) ==
          ring_quality(paths, search_rings(topo, paths).rings.front().order));
  }
}

namespace {
// A random machine: up to 7 GPUs on two sockets, under random switches, with random NVLinks.
Topology random_machine(std::mt19937& rng, int gpus) {
  Topology topo;
  CpuInfo cpu0 = representative_cpu(CpuFamily::intel_skylake);
  CpuInfo cpu1 = cpu0;
  cpu1.numa = 1;
  const int cpus[2] = {topo.add_cpu(cpu0), topo.add_cpu(cpu1)};
  std::vector<int> switches;
  int bus = 1;
  const auto pci = [&bus](double gts, int width) {
    PciInfo info;
    char id[16];
    std::snprintf(id, sizeof id, "0000:%02x:00.0", bus++);
    info.busid = id;
    info.link_gts = gts;
    info.link_width = width;
    return info;
  };
  for (int s = 0; s < 3; ++s) {
    const int parent = rng() % 2 == 0 || switches.empty() ? cpus[rng() % 2] : switches[rng() % switches.size()];
    switches.push_back(topo.add_pci_switch(parent, pci(16.0, rng() % 2 ? 16 : 8), static_cast<int>(rng() % 2)));
  }
  std::vector<int> nodes;
  for (int d = 0; d < gpus; ++d) {
    const int r = static_cast<int>(rng() % 5);
    const int parent = r < 3 ? switches[r] : cpus[r - 3];
    nodes.push_back(topo.add_gpu(parent, pci(r == 4 ? 8.0 : 16.0, 16), d, 80, static_cast<int>(rng() % 2)));
  }
  for (int a = 0; a < gpus; ++a) {
    for (int b = a + 1; b < gpus; ++b) {
      if (rng() % 3 == 0) topo.add_nvlink(nodes[a], nodes[b], 1 + static_cast<int>(rng() % 4));
    }
  }
  validate(topo, "random_machine");
  return topo;
}
}  // namespace

TEST_CASE("exact on random machines: search equals brute force", "[topo][ring]") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 120; ++trial) {
    const int gpus = 1 + trial % 7;
    const Topology topo = random_machine(rng, gpus);
    const PathMatrix paths(topo);
    const RingPlan plan = search_rings(topo, paths);
    INFO("trial " << trial << ", " << gpus << " GPUs");
    REQUIRE(plan.rings.size() >= 1);
    if (gpus == 1) {
      CHECK(plan.rings.front().order == std::vector<int>{0});
      continue;
    }
    CHECK(ring_quality(paths, plan.rings.front().order) == brute_force(paths).best);
    // Every channel is a permutation starting at GPU 0 and runs at the plan's speed.
    for (const Ring& ring : plan.rings) {
      std::vector<int> sorted = ring.order;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int> all(static_cast<std::size_t>(gpus));
      std::iota(all.begin(), all.end(), 0);
      CHECK(sorted == all);
      CHECK(ring.order.front() == 0);
      CHECK(ring.bottleneck_GBps >= plan.channel_GBps * (1 - 1e-9));
    }
  }
}

TEST_CASE("beyond 8 GPUs the heuristic keeps sockets contiguous, fast", "[topo][ring]") {
  // 16 PCIe GPUs, two sockets, pairs under switches: the best rings cross the socket link twice.
  std::string text = "GPU0";
  for (int i = 1; i < 16; ++i) text += " GPU" + std::to_string(i);
  text += "\n";
  for (int i = 0; i < 16; ++i) {
    text += "GPU" + std::to_string(i);
    for (int j = 0; j < 16; ++j) text += i == j ? " X" : i / 8 != j / 8 ? " SYS" : i / 2 == j / 2 ? " PIX" : " PHB";
    text += "\n";
  }
  const Topology topo = read_nvsmi(text, NvsmiOptions{80, 4, CpuFamily::amd});
  const auto start = std::chrono::steady_clock::now();
  const RingPlan plan = search_rings(topo);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_FALSE(plan.exact);
  CHECK(seconds < 5.0);
  const std::vector<double> q = ring_quality(PathMatrix(topo), plan.rings.front().order);
  CHECK(q[0] == 16.0);
  CHECK(q[1] == 16.0);
  CHECK(q[2] == 24.0);  // only two socket crossings
  CHECK(search_rings(topo).rings.front().order == plan.rings.front().order);  // deterministic
}

TEST_CASE("edge cases: no GPU, one GPU, two GPUs", "[topo][ring]") {
  Topology empty;
  empty.add_cpu(CpuInfo{});
  CHECK(search_rings(empty).rings.empty());
  CHECK(best_ring_order(empty).empty());

  const Topology one = read_nvsmi("GPU0\nGPU0 X\n");
  const RingPlan single = search_rings(one);
  REQUIRE(single.rings.size() == 1);
  CHECK(single.rings[0].order == std::vector<int>{0});
  CHECK(single.rings[0].hop_GBps.empty());

  const Topology two = read_nvsmi("GPU0 GPU1\nGPU0 X PIX\nGPU1 PIX X\n", NvsmiOptions{80, 4, CpuFamily::amd});
  const RingPlan pair = search_rings(two);
  CHECK(pair.rings[0].order == std::vector<int>{0, 1});
  CHECK(pair.rings[0].hop_GBps == std::vector<double>{24, 24});  // opposite directions: no sharing
}

namespace {
void require_rings_are_permutations(const RingPlan& plan, int gpus) {
  REQUIRE_FALSE(plan.rings.empty());
  std::vector<int> all(static_cast<std::size_t>(gpus));
  std::iota(all.begin(), all.end(), 0);
  for (std::size_t c = 0; c < plan.rings.size(); ++c) {
    INFO("channel " << c);
    std::vector<int> sorted = plan.rings[c].order;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE(sorted == all);
    CHECK(plan.rings[c].order.front() == 0);
    CHECK(plan.rings[c].hop_GBps.size() == static_cast<std::size_t>(gpus));
  }
}
}  // namespace

// Issue 7, item 10: an unbounded 2-opt took 38 s on 800 GPUs and did not finish on 4000. Speed is
// measured by hand (docs/topology.md), not timed here; this only has to finish and be a ring.
// Under the sanitizers 1024 GPUs: the 16M paths of 4096 (two allocations each) take 80 s there, and
// the budget is spent at 1024 too, so the same code paths run.
TEST_CASE("ring search completes on 4096 PCIe GPUs with a valid ring per channel", "[topo][ring][large]") {
  const int gpus = chorus::test::kSanitized ? 1024 : 4096;
  const Topology topo = fixtures::pcie_farm(gpus);
  const PathMatrix paths(topo);
  REQUIRE(paths.gpu_count() == gpus);
  const RingPlan plan = search_rings(topo, paths);
  CHECK_FALSE(plan.exact);
  CHECK(plan.budget_spent);
  require_rings_are_permutations(plan, gpus);
  CHECK(plan.channel_GBps > 0);
  for (const Ring& ring : plan.rings) CHECK(ring.bottleneck_GBps >= plan.channel_GBps * (1 - 1e-9));
}

TEST_CASE("the work budget bounds the heuristic, never its answer", "[topo][ring]") {
  // No budget at all: the greedy rings alone, still rings, still at the plan's speed.
  const Topology farm = fixtures::pcie_farm(64);
  const PathMatrix paths(farm);
  RingSearchOptions none;
  none.work_budget = 0;
  const RingPlan greedy = search_rings(farm, paths, none);
  CHECK(greedy.budget_spent);
  require_rings_are_permutations(greedy, 64);
  // The default budget does not bind on 64 GPUs, and polishing never makes the ring worse.
  const RingPlan full = search_rings(farm, paths);
  CHECK_FALSE(full.budget_spent);
  CHECK_FALSE(ring_better(ring_quality(paths, greedy.rings.front().order),
                          ring_quality(paths, full.rings.front().order)));

  // Once the budget is spent, further channels repeat earlier rings: NVSwitch still fits six.
  RingSearchOptions spent;
  spent.exact_limit = 0;
  spent.work_budget = 0;
  const RingPlan h100 = search_rings(fixtures::load("dgx-h100.xml"), spent);
  CHECK(h100.budget_spent);
  CHECK(h100.channel_GBps == 60.0);
  CHECK(h100.rings.size() == 6);
  require_rings_are_permutations(h100, 8);
}

}  // namespace test_ring_search
