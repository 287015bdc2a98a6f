// Ring orders for a team of GPUs from a topology (cuda/topology_rings.hpp), on synthetic machines of eight
// GPUs: a DGX-1's hybrid cube-mesh, and NVLinked pairs. The team's rings must be the ring search's for the
// team's GPUs, whatever CUDA numbers them, and fall back to the identity ring with a reason.
#include <catch2/catch.hpp>

#include <chorus/cuda/topology_rings.hpp>
#include <chorus/topo/nvsmi_reader.hpp>
#include <chorus/topo/path.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace test_topology_rings {

using namespace chorus::topo;
using chorus::cuda::RingChoice;
using chorus::cuda::RingOrders;

namespace {

// Bus ids with hex letters ("0000:1a:00.0"), so matching a CUDA-style upper-case id needs normalising.
std::string busid_of(int gpu, bool upper = false) {
  char id[16];
  std::snprintf(id, sizeof id, upper ? "0000:%02X:00.0" : "0000:%02x:00.0", 0x1a + gpu);
  return id;
}

// Eight GPUs, two per PCIe switch, NVLinks added by `link(topo, gpu nodes)`.
template <class Link>
Topology eight_gpus(const Link& link) {
  Topology topo;
  const int cpu = topo.add_cpu(representative_cpu(CpuFamily::intel_broadwell));
  int parent = -1;
  std::vector<int> gpus;
  for (int g = 0; g < 8; ++g) {
    if (g % 2 == 0) {
      PciInfo bridge;
      bridge.busid = "0000:0" + std::to_string(g / 2) + ":00.0";
      bridge.class_code = "0x060400";
      parent = topo.add_pci_switch(cpu, bridge);
    }
    PciInfo pci;
    pci.busid = busid_of(g);
    pci.class_code = "0x030200";
    pci.vendor = "0x10de";
    gpus.push_back(topo.add_gpu(parent, pci, g, 70));
  }
  link(topo, gpus);
  validate(topo, "eight_gpus");
  return topo;
}

// Two fully connected quads (GPUs 0-3, 4-7) and a link from each GPU to its partner in the other quad,
// one NVLink each: every GPU reaches every other over NVLink in at most two hops.
Topology cube_mesh() {
  return eight_gpus([](Topology& topo, const std::vector<int>& gpus) {
    for (int quad : {0, 4}) {
      for (int a = 0; a < 4; ++a) {
        for (int b = a + 1; b < 4; ++b) topo.add_nvlink(gpus[static_cast<std::size_t>(quad + a)], gpus[static_cast<std::size_t>(quad + b)], 1);
      }
    }
    for (int g = 0; g < 4; ++g) topo.add_nvlink(gpus[static_cast<std::size_t>(g)], gpus[static_cast<std::size_t>(g + 4)], 1);
  });
}

// NVLink only within the pairs 0-1, 2-3, 4-5, 6-7; PCIe between pairs: a good ring keeps partners adjacent.
Topology nvlink_pairs() {
  return eight_gpus([](Topology& topo, const std::vector<int>& gpus) {
    for (std::size_t g = 0; g < 8; g += 2) topo.add_nvlink(gpus[g], gpus[g + 1], 4);
  });
}

// A ring of ranks as the GPUs they run on.
std::vector<int> as_gpus(const std::vector<int>& order, const std::vector<int>& gpu_of) {
  std::vector<int> gpus;
  for (int rank : order) gpus.push_back(gpu_of[static_cast<std::size_t>(rank)]);
  return gpus;
}

std::vector<std::string> busids_of(const std::vector<int>& gpu_of) {
  std::vector<std::string> busids;
  for (int g : gpu_of) busids.push_back(busid_of(g, true));  // as cudaDeviceGetPCIBusId spells them
  return busids;
}

}  // namespace

TEST_CASE("a team of every GPU gets the ring search's distinct channel rings") {
  const Topology machine = cube_mesh();
  const RingPlan plan = search_rings(machine);
  const RingChoice choice = chorus::cuda::ring_orders_for(machine, busids_of({0, 1, 2, 3, 4, 5, 6, 7}));
  INFO(choice.source);
  REQUIRE(choice.orders.size() >= 2);  // a ring and its reverse use opposite directions of each link
  CHECK(choice.orders == chorus::cuda::distinct_rings(plan));
  CHECK(choice.source.find("topology") != std::string::npos);
}

TEST_CASE("CUDA's numbering need not be the topology's: rings are found for the team's own ranks") {
  const Topology machine = nvlink_pairs();
  const std::vector<int> gpu_of = {5, 2, 7, 0, 3, 6, 1, 4};  // rank r is GPU gpu_of[r]
  const RingChoice choice = chorus::cuda::ring_orders_for(machine, busids_of(gpu_of));
  INFO(choice.source);
  REQUIRE_FALSE(choice.orders.empty());
  // As good as the machine's best ring: the same hop bandwidths, in machine terms (ranks taken for GPUs
  // would put PCIe hops between partners).
  const PathMatrix paths(machine);
  const std::vector<double> best = ring_quality(paths, search_rings(machine).rings.front().order);
  REQUIRE(ring_quality(paths, {0, 2, 4, 6, 1, 3, 5, 7}) != best);  // the machine tells rings apart
  for (const std::vector<int>& order : choice.orders) CHECK(ring_quality(paths, as_gpus(order, gpu_of)) == best);
  // The team's topology is the machine renumbered: GPU r is rank r.
  const Topology team = chorus::cuda::team_topology(machine, busids_of(gpu_of));
  const std::vector<int> nodes = team.gpu_nodes();
  for (std::size_t r = 0; r < nodes.size(); ++r) CHECK(team.nodes[static_cast<std::size_t>(nodes[r])].pci.busid == busid_of(gpu_of[r]));
}

TEST_CASE("a team of some GPUs searches only their links") {
  const Topology machine = cube_mesh();
  const std::vector<int> gpu_of = {0, 2, 6, 4};
  const Topology team = chorus::cuda::team_topology(machine, busids_of(gpu_of));
  CHECK(team.gpu_count() == 4);
  CHECK(team.nvlinks.size() == 4);  // 0-2, 4-6, 0-4, 2-6
  const RingChoice choice = chorus::cuda::ring_orders_for(machine, busids_of(gpu_of));
  INFO(choice.source);
  REQUIRE_FALSE(choice.orders.empty());
  CHECK(choice.orders == chorus::cuda::distinct_rings(search_rings(team)));
}

TEST_CASE("a GPU the topology lacks: the identity ring, saying why") {
  const RingChoice choice = chorus::cuda::ring_orders_for(cube_mesh(), {busid_of(0, true), "0000:99:00.0", busid_of(1, true)});
  CHECK(choice.orders == RingOrders{{0, 1, 2}});
  CHECK(choice.source.find("identity ring") != std::string::npos);
  CHECK(choice.source.find("on rank 1: GPU 0000:99:00.0 is not in the topology") != std::string::npos);
  CHECK(chorus::cuda::ring_orders_for(Topology{}, {busid_of(0)}).orders == RingOrders{{0}});
}

TEST_CASE("distinct_rings keeps the first of each ring, in plan order, at most kMaxRings") {
  RingPlan plan;
  for (const std::vector<int>& order : RingOrders{{0, 1, 2}, {0, 1, 2}, {0, 2, 1}, {0, 1, 2}}) plan.rings.push_back(Ring{order, {}, 0.0});
  CHECK(chorus::cuda::distinct_rings(plan) == RingOrders{{0, 1, 2}, {0, 2, 1}});
  RingPlan many;
  std::vector<int> order = {0, 1, 2, 3, 4};
  do many.rings.push_back(Ring{order, {}, 0.0});
  while (std::next_permutation(order.begin() + 1, order.end()) && many.rings.size() < 12);
  const RingOrders capped = chorus::cuda::distinct_rings(many);
  REQUIRE(capped.size() == static_cast<std::size_t>(chorus::cuda::kernel::kMaxRings));
  CHECK(capped.back() == many.rings[7].order);
}

}  // namespace test_topology_rings
