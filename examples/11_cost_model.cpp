// Example 11: what a collective should cost, before it runs.
//
// The cost model prices the schedule an algorithm would run on a fabric: every message pays a
// latency (alpha) and its bytes at the route's bandwidth (beta), and messages that cross one link
// at the same time take turns. On a GPU machine the fabric comes from the topology and NCCL's
// per-protocol figures (LL: half the bandwidth, lowest latency; Simple: all the bandwidth,
// highest latency); docs/cost-model.md has the numbers and where they come from.
//
// For an 8x H100 NVSwitch node (tests/fixtures/topo/dgx-h100.xml) this program prints, per
// message size, the cheapest algorithm x protocol and the ring's Simple busbw, then where the
// ring starts to beat the tree for 2, 4 and 8 GPUs: small messages are latency-bound, so the
// algorithm with fewer sequential steps wins, and the more ranks, the larger the messages for
// which it still wins. Exits non-zero if the model stops showing either.
//
// Usage: 11_cost_model [fixture directory]
#include <chorus/model.hpp>
#include <chorus/topo.hpp>

#include <cstdio>
#include <string>

namespace model = chorus::model;
using chorus::Algorithm;
using chorus::Collective;

#ifndef CHORUS_FIXTURE_DIR
#define CHORUS_FIXTURE_DIR "tests/fixtures/topo"
#endif

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : CHORUS_FIXTURE_DIR;
  const chorus::topo::Topology h100 = chorus::topo::read_nccl_xml_file(dir + "/dgx-h100.xml");
  const model::Fabric ring_simple = model::gpu_fabric(h100, {0, model::Protocol::simple, model::LatencyTable::ring});

  std::printf("8x H100 SXM (NVSwitch, 18 NVLinks of 20.6 GB/s per GPU), all_reduce of floats\n\n");
  std::printf("%12s  %-24s %10s %12s  %s\n", "size", "cheapest", "time (us)", "busbw(GB/s)", "ring/Simple busbw");
  for (std::size_t bytes = 1024; bytes <= (std::size_t(4) << 30); bytes *= 16) {
    const model::Choice best = model::choose_gpu(h100, 0, Collective::all_reduce, bytes / 4, 4);
    const model::Prediction ring = model::predict(ring_simple, Collective::all_reduce, Algorithm::ring, bytes / 4, 4);
    const std::string name = std::string(chorus::to_string(best.algorithm)) + "/" + model::to_string(best.protocol);
    std::printf("%12zu  %-24s %10.1f %12.1f  %.1f\n", bytes, name.c_str(), best.prediction.time_us,
                best.prediction.busbw_GBps, ring.busbw_GBps);
  }
  const double large = model::predict(ring_simple, Collective::all_reduce, Algorithm::ring, (std::size_t(8) << 30) / 4, 4).busbw_GBps;
  std::printf("\nring/Simple at 8 GB: %.1f GB/s (nccl-tests#212 reports 365-370 for NCCL_ALGO=RING)\n\n", large);

  std::printf("where the ring starts to beat the tree (Simple):\n");
  std::size_t last = 0;
  bool grows = true;
  for (int gpus : {2, 4, 8}) {
    const model::Fabric ring = model::gpu_fabric(h100, {gpus, model::Protocol::simple, model::LatencyTable::ring});
    const model::Fabric tree = model::gpu_fabric(h100, {gpus, model::Protocol::simple, model::LatencyTable::tree});
    model::PredictOptions pipelined;
    pipelined.best_pipelining = true;
    std::size_t at = 0;
    for (std::size_t bytes = 1024; bytes <= (std::size_t(1) << 32) && at == 0; bytes *= 2) {
      const double r = model::predict(ring, Collective::all_reduce, Algorithm::ring, bytes / 4, 4, pipelined).time_us;
      const double t = model::predict(tree, Collective::all_reduce, Algorithm::tree, bytes / 4, 4, pipelined).time_us;
      if (r < t) at = bytes;
    }
    std::printf("  %d GPUs: from %zu bytes (ring: %d sequential steps, tree: a few per level)\n", gpus, at, 2 * (gpus - 1));
    grows = grows && at >= last && at > 0;
    last = at;
  }
  const bool ok = grows && large > 0.85 * 365.0 && large < 1.15 * 370.0;
  std::printf("\n%s\n", ok ? "ok" : "FAILED: the model no longer shows what this example teaches");
  return ok ? 0 : 1;
}
