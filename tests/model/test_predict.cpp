// predict(): bad input, units, monotonicity, and the ring/tree crossover moving with the rank
// count the way NCCL's tuner moves it (trees win larger messages on more ranks).
#include <catch2/catch.hpp>

#include <chorus/bench/bandwidth.hpp>
#include <chorus/model/gpu_fabric.hpp>
#include <chorus/model/predict.hpp>
#include <chorus/model/tuner.hpp>
#include <chorus/topo/nccl_xml.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace test_predict {

using namespace chorus;
using chorus::model::LatencyTable;
using chorus::model::Protocol;

namespace {
topo::Topology fixture(const std::string& name) {
  return topo::read_nccl_xml_file(std::string(CHORUS_FIXTURE_DIR) + "/" + name);
}

model::PredictOptions pipelined() {
  model::PredictOptions o;
  o.best_pipelining = true;
  return o;
}

// The smallest power-of-two size (bytes) from 1 KiB at which the ring is strictly faster than
// the tree, or 0 if it never is up to 4 GiB.
std::size_t crossover(const model::Fabric& ring, const model::Fabric& tree) {
  for (std::size_t bytes = 1024; bytes <= (std::size_t(1) << 32); bytes *= 2) {
    const double r = model::predict(ring, Collective::all_reduce, Algorithm::ring, bytes / 4, 4, pipelined()).time_us;
    const double t = model::predict(tree, Collective::all_reduce, Algorithm::tree, bytes / 4, 4, pipelined()).time_us;
    if (r < t) return bytes;
  }
  return 0;
}
}  // namespace

TEST_CASE("predict refuses bad input with chorus::Error") {
  const model::Fabric fabric = model::uniform_fabric(4, 1.0, 10.0);
  CHECK_THROWS_WITH(model::predict(fabric, Collective::all_reduce, Algorithm::automatic, 100, 4),
                    Catch::Contains("automatic"));
  CHECK_THROWS_WITH(model::predict(fabric, Collective::all_reduce, static_cast<Algorithm>(42), 100, 4),
                    Catch::Contains("unknown algorithm 42"));
  CHECK_THROWS_WITH(model::predict(fabric, Collective::broadcast, Algorithm::ring, 100, 4),
                    Catch::Contains("ring does not implement broadcast"));
  CHECK_THROWS_WITH(model::predict(fabric, Collective::all_reduce, Algorithm::ring, 100, 0),
                    Catch::Contains("element size"));
  model::PredictOptions root;
  root.root = 4;
  CHECK_THROWS_WITH(model::predict(fabric, Collective::reduce, Algorithm::chain, 100, 4, root),
                    Catch::Contains("root 4 is out of range for 4 ranks"));
  model::Fabric empty;  // zero ranks
  CHECK_THROWS_WITH(model::predict(empty, Collective::all_reduce, Algorithm::ring, 100, 4),
                    Catch::Contains("0 ranks"));
  CHECK_THROWS_AS(model::uniform_fabric(0, 1.0, 1.0), chorus::Error);
}

TEST_CASE("every collective x algorithm has a prediction, in nccl-tests' units") {
  const int n = 5;
  const model::Fabric fabric = model::uniform_fabric(n, 2.0, 8.0);
  const std::size_t count = 3001;  // does not divide by the ranks
  for (int c = 0; c < kCollectiveCount; ++c) {
    const auto collective = static_cast<Collective>(c);
    for (int a = 1; a < kAlgorithmCount; ++a) {
      const auto algorithm = static_cast<Algorithm>(a);
      if (!supports(collective, algorithm)) continue;
      INFO(to_string(collective) << " " << to_string(algorithm));
      const model::Prediction p = model::predict(fabric, collective, algorithm, count, 4);
      CHECK(p.time_us > 0.0);
      const std::size_t bytes = model::call_bytes(collective, count, 4, n);
      CHECK(p.algbw_GBps == Approx(bench::algbw_gbps(bytes, p.time_us * 1e-6)));
      CHECK(p.busbw_GBps == Approx(p.algbw_GBps * bench::bus_factor(collective, n)));
      // Nothing moves faster than beta per link: busbw is at most beta (ring-optimal algorithms reach it).
      CHECK(p.busbw_GBps <= 8.0 * 1.0001);
    }
  }
}

TEST_CASE("time grows with size and busbw approaches the link at large sizes") {
  const model::Fabric h100 = model::gpu_fabric(fixture("dgx-h100.xml"), {0, Protocol::simple, LatencyTable::ring});
  const model::Fabric uniform = model::uniform_fabric(6, 1.5, 12.0);
  for (const model::Fabric* fabric : {&h100, &uniform}) {
    for (Algorithm algorithm : {Algorithm::ring, Algorithm::tree, Algorithm::halving_doubling, Algorithm::one_shot,
                                Algorithm::two_shot}) {
      double last_time = 0.0, last_busbw = 0.0;
      for (std::size_t bytes = 64; bytes <= (std::size_t(1) << 30); bytes *= 4) {
        const auto p = model::predict(*fabric, Collective::all_reduce, algorithm, bytes / 4, 4, pipelined());
        INFO(fabric->description << " " << to_string(algorithm) << " " << bytes << " B");
        CHECK(p.time_us >= last_time);
        if (algorithm == Algorithm::ring) CHECK(p.busbw_GBps >= last_busbw * 0.999);
        last_time = p.time_us;
        last_busbw = p.busbw_GBps;
      }
    }
  }
  // The ring's busbw tends to the link figure: 370.8 GB/s on H100, beta on the uniform fabric.
  CHECK(model::predict(h100, Collective::all_reduce, Algorithm::ring, std::size_t(1) << 31, 4).busbw_GBps ==
        Approx(370.8).epsilon(0.01));
  CHECK(model::predict(uniform, Collective::all_reduce, Algorithm::ring, std::size_t(1) << 28, 4).busbw_GBps ==
        Approx(12.0).epsilon(0.01));
}

TEST_CASE("trees win small messages, rings large ones, and the crossover grows with the rank count") {
  // Pure alpha-beta: the ring pays 2(n-1) alphas, the tree about 2 log2(n), while the ring moves
  // fewer bytes per link; the crossover size grows with n (as NCCL's tuning picks trees for
  // larger messages at scale).
  std::size_t last = 0;
  for (int n : {4, 8, 16, 32, 64}) {
    const model::Fabric fabric = model::uniform_fabric(n, 2.0, 10.0);
    const std::size_t at = crossover(fabric, fabric);
    INFO("n = " << n << ": ring wins from " << at << " B");
    CHECK(at > 0);
    CHECK(at >= last);
    last = at;
  }
  CHECK(crossover(model::uniform_fabric(64, 2.0, 10.0), model::uniform_fabric(64, 2.0, 10.0)) >
        4 * crossover(model::uniform_fabric(4, 2.0, 10.0), model::uniform_fabric(4, 2.0, 10.0)));
  // On an H100 NVSwitch node with NCCL's Simple latencies (ring and tree tables).
  const topo::Topology h100 = fixture("dgx-h100.xml");
  last = 0;
  for (int n : {2, 4, 8}) {
    const auto ring = model::gpu_fabric(h100, {n, Protocol::simple, LatencyTable::ring});
    const auto tree = model::gpu_fabric(h100, {n, Protocol::simple, LatencyTable::tree});
    const std::size_t at = crossover(ring, tree);
    INFO("H100, " << n << " GPUs: ring wins from " << at << " B");
    CHECK(at > 0);
    CHECK(at >= last);
    last = at;
  }
  CHECK(last >= 1024 * 1024);  // 8 GPUs: trees up to at least 1 MiB
}

TEST_CASE("the tuner takes the cheapest candidate") {
  const model::Fabric fabric = model::uniform_fabric(8, 5.0, 10.0);
  const model::Choice small = model::choose(fabric, Collective::all_reduce, 16, 4);
  const model::Choice large = model::choose(fabric, Collective::all_reduce, std::size_t(1) << 26, 4);
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::halving_doubling, Algorithm::one_shot,
                      Algorithm::two_shot}) {
    CHECK(small.prediction.time_us <= model::predict(fabric, Collective::all_reduce, a, 16, 4).time_us);
    CHECK(large.prediction.time_us <= model::predict(fabric, Collective::all_reduce, a, std::size_t(1) << 26, 4).time_us);
  }
  CHECK(small.algorithm != Algorithm::ring);  // 14 alphas against a handful
  const model::Choice gpu_small = model::choose_gpu(fixture("dgx-h100.xml"), 0, Collective::all_reduce, 256, 4);
  const model::Choice gpu_large = model::choose_gpu(fixture("dgx-h100.xml"), 0, Collective::all_reduce, std::size_t(1) << 28, 4);
  CHECK(gpu_small.protocol == Protocol::ll);       // NCCL: LL for small messages
  CHECK(gpu_large.protocol == Protocol::simple);   // and Simple for large ones
}

}  // namespace test_predict
