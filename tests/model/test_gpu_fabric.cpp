// GPU fabrics from topology fixtures: NCCL's per-protocol figures on each route, LL128 only over
// NVLink, and links shared by messages that cross them at the same time.
#include <catch2/catch.hpp>

#include <chorus/algo/schedule.hpp>
#include <chorus/model/gpu_fabric.hpp>
#include <chorus/model/simulate.hpp>
#include <chorus/topo/nccl_xml.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace test_gpu_fabric {

using namespace chorus;
using chorus::model::GpuFabricOptions;
using chorus::model::LatencyTable;
using chorus::model::Protocol;

namespace {
topo::Topology fixture(const std::string& name) {
  return topo::read_nccl_xml_file(std::string(CHORUS_FIXTURE_DIR) + "/" + name);
}

// n ranks; each (from, to) pair sends `count` elements, all at time 0.
algo::Schedule messages(int n, const std::vector<std::pair<int, int>>& pairs, std::size_t count) {
  algo::Schedule s;
  s.ranks = n;
  s.count = count;
  s.steps.resize(static_cast<std::size_t>(n));
  for (auto [from, to] : pairs) {
    algo::Step send;
    send.op = algo::Op::send;
    send.peer = to;
    send.count = count;
    s.steps[from].push_back(send);
    algo::Step recv;
    recv.op = algo::Op::recv_copy;
    recv.peer = from;
    recv.count = count;
    recv.dst = {algo::Buffer::output, 0};
    s.steps[to].push_back(recv);
  }
  algo::link(s);
  return s;
}
}  // namespace

TEST_CASE("an NVSwitch route carries NCCL's figures for each protocol") {
  const topo::Topology h100 = fixture("dgx-h100.xml");
  const double nvlink = 18 * 20.6;  // 370.8 GB/s
  const auto route = [&](Protocol p, LatencyTable t) { return model::gpu_fabric(h100, {0, p, t}).route(0, 5); };
  CHECK(route(Protocol::simple, LatencyTable::ring).GBps == Approx(nvlink));
  CHECK(route(Protocol::ll128, LatencyTable::ring).GBps == Approx(0.92 * nvlink));
  CHECK(route(Protocol::ll, LatencyTable::ring).GBps == Approx(141.0));  // llMaxBw (Hopper) < half of 370.8
  CHECK(route(Protocol::ll, LatencyTable::ring).latency_us == Approx(0.6));
  CHECK(route(Protocol::ll128, LatencyTable::ring).latency_us == Approx(1.9));
  CHECK(route(Protocol::simple, LatencyTable::ring).latency_us == Approx(3.4));
  CHECK(route(Protocol::ll128, LatencyTable::tree).latency_us == Approx(1.25));
  CHECK(route(Protocol::simple, LatencyTable::tree).latency_us == Approx(4.0));
  CHECK(model::gpu_fabric(h100, {0, Protocol::simple, LatencyTable::ring}).base_latency_us == Approx(8.4));
  CHECK(model::gpu_fabric(h100, {0, Protocol::ll128, LatencyTable::tree}).base_latency_us == Approx(14.0));
  CHECK(model::gpu_fabric(h100, {4, Protocol::simple, LatencyTable::ring}).ranks == 4);
}

TEST_CASE("PCIe routes take PCIe latencies and LL128 is refused without NVLink") {
  const topo::Topology pcie = fixture("pcie-8gpu-2socket.xml");
  const model::Fabric simple = model::gpu_fabric(pcie, {0, Protocol::simple, LatencyTable::ring});
  CHECK(simple.route(0, 1).latency_us == Approx(5.7));
  CHECK(simple.route(0, 1).GBps == Approx(24.0));  // Gen4 x16
  CHECK(simple.route(0, 4).GBps == Approx(16.0));  // the AMD socket link is the narrowest
  try {
    model::gpu_fabric(pcie, {0, Protocol::ll128, LatencyTable::ring});
    FAIL("LL128 accepted over PCIe");
  } catch (const chorus::Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK_THAT(e.what(), Catch::Contains("LL128"));
  }
  // NVLink everywhere: LL128 is fine.
  CHECK_NOTHROW(model::gpu_fabric(fixture("dgx-a100.xml"), {0, Protocol::ll128, LatencyTable::ring}));
}

TEST_CASE("messages crossing one switch uplink and socket link take turns; disjoint ones do not") {
  const topo::Topology pcie = fixture("pcie-8gpu-2socket.xml");
  const model::Fabric fabric = model::gpu_fabric(pcie, {0, Protocol::simple, LatencyTable::ring});
  const std::size_t count = 1 << 20;  // 4 MiB of floats
  const double one = model::simulate_us(messages(8, {{0, 4}}, count), fabric, 4);
  const double shared = model::simulate_us(messages(8, {{0, 4}, {1, 5}}, count), fabric, 4);
  const double apart = model::simulate_us(messages(8, {{0, 1}, {4, 5}}, count), fabric, 4);
  const double alone = model::simulate_us(messages(8, {{0, 1}}, count), fabric, 4);
  const double transfer = 4.0 * count / (16.0 * 1e3);  // us at the socket link's 16 GB/s
  CHECK(one == Approx(fabric.base_latency_us + transfer + 5.7));
  CHECK(shared == Approx(fabric.base_latency_us + 2 * transfer + 5.7));
  CHECK(apart == Approx(alone));
  // On an NVSwitch the same two messages use different ports.
  const model::Fabric nvs = model::gpu_fabric(fixture("dgx-a100.xml"), {0, Protocol::simple, LatencyTable::ring});
  CHECK(model::simulate_us(messages(8, {{0, 4}, {1, 5}}, count), nvs, 4) ==
        Approx(model::simulate_us(messages(8, {{0, 4}}, count), nvs, 4)));
  // ... but two messages into one GPU share its port.
  CHECK(model::simulate_us(messages(8, {{0, 4}, {1, 4}}, count), nvs, 4) >
        1.9 * (model::simulate_us(messages(8, {{0, 4}}, count), nvs, 4) - nvs.base_latency_us - 3.4));
}

TEST_CASE("gpu_fabric refuses a rank count the topology does not have") {
  const topo::Topology a100 = fixture("dgx-a100.xml");
  CHECK_THROWS_WITH(model::gpu_fabric(a100, {9, Protocol::simple, LatencyTable::ring}),
                    Catch::Contains("between 1 and the topology's 8 GPUs, got 9"));
  CHECK_THROWS_AS(model::gpu_fabric(a100, {-1, Protocol::simple, LatencyTable::ring}), chorus::Error);
  CHECK_THROWS_AS(model::gpu_fabric(topo::Topology{}, {}), chorus::Error);
}

}  // namespace test_gpu_fabric
