// Channel rings on the CPU twin: block b of every rank runs on ring b % rings (Options::ring_orders), so a
// team whose blocks use different rings must still give every rank the right bits. The reference is the
// host backend run once per ring order, each element taken from the run over the ring of the block that
// owns it (the kernels' partition: block b owns share b of every chunk), so floats must match bit for bit
// and every rank must agree. Also: the ring table's arithmetic, and bad orders refused.
#include <catch2/catch.hpp>

#include "collective_checks.hpp"

#include <chorus/algo/chunking.hpp>
#include <chorus/cuda/ring_orders.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

namespace test_twin_rings {

using namespace collective_checks;
using chorus::ErrorCode;
using chorus::cuda::RingOrders;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Team;
namespace kernel = chorus::cuda::kernel;

namespace {

constexpr int kBlocks = 4;  // more blocks than rings: ring 0 serves blocks 0 and 3

// Three different rings: the identity, its reverse and a seeded shuffle.
RingOrders three_rings(int n) {
  std::vector<int> identity(static_cast<std::size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  std::vector<int> reverse(identity.rbegin(), identity.rend());
  std::vector<int> shuffle = identity;
  std::mt19937 random(static_cast<std::uint32_t>(n) * 31u);
  std::shuffle(shuffle.begin(), shuffle.end(), random);
  return {identity, reverse, shuffle};
}

Options ring_options(RingOrders orders) {
  Options options;
  options.blocks = kBlocks;
  options.threads = 2;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;  // 16 floats: the larger count takes many slots per block
  options.fifo_depth = 2;
  options.ring_orders = std::move(orders);
  return options;
}

// The block owning each element: all_reduce cuts the buffer into n chunks and block b takes share b of
// each; the other ring collectives take share b of each rank's block of `count` (element e % count).
std::vector<int> owners(Collective collective, std::size_t count, int n) {
  std::vector<int> owner;
  if (collective == Collective::all_reduce) {
    owner.assign(count, -1);
    for (int chunk = 0; chunk < n; ++chunk) {
      const auto whole = chorus::algo::chunk_range(count, static_cast<std::size_t>(n), static_cast<std::size_t>(chunk));
      for (int b = 0; b < kBlocks; ++b) {
        const auto share = kernel::block_share(whole, kBlocks, b);
        for (std::size_t e = share.offset; e < share.offset + share.count; ++e) owner[e] = b;
      }
    }
    return owner;
  }
  const std::size_t elements = collective == Collective::all_gather ? count * static_cast<std::size_t>(n) : count;
  owner.assign(elements, -1);
  for (int b = 0; b < kBlocks; ++b) {
    const auto share = kernel::block_share(kernel::Range{0, count}, kBlocks, b);
    for (std::size_t e = 0; e < elements; ++e) {
      if (e % count >= share.offset && e % count < share.offset + share.count) owner[e] = b;
    }
  }
  return owner;
}

// Every rank's output from the host backend over one ring order; reduce: the root's from the chain's
// documented fold order along that ring (the host's chain folds the other way round).
template <class T>
std::vector<std::vector<T>> host_outputs(const Call& c, const std::vector<int>& order, const std::vector<std::vector<T>>& inputs) {
  const int n = static_cast<int>(inputs.size());
  std::vector<std::vector<T>> out(static_cast<std::size_t>(n), std::vector<T>(chorus::recv_count(c.collective, c.count, n)));
  if (c.collective == Collective::reduce) {
    out[static_cast<std::size_t>(c.root)] = chain_reference(inputs, c.op, c.root, order);
    return out;
  }
  chorus::host::Team host(n);
  host.set_ring_order(order);
  harness::run(host, [&](chorus::host::Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    host_call<T>(comm, c, inputs[r].data(), out[r].data());
  });
  return out;
}

// Runs `c` on the twin and checks each rank's output against the per-ring references stitched by owner.
// Returns whether the stitched result differs from the first ring's alone (floats: the rings mattered).
template <class T>
bool check_multi_ring(Team& team, const Call& c, std::uint32_t seed) {
  const int n = team.size();
  const RingOrders& orders = team.ring_orders();
  std::vector<std::vector<T>> inputs;
  for (int r = 0; r < n; ++r) {
    const std::size_t sends = chorus::send_count(c.collective, c.count, n);
    inputs.push_back(std::is_floating_point<T>::value ? order_sensitive<T>(r, sends, seed) : harness::inputs<T>(c.op, r, sends, seed));
  }
  const std::size_t recvs = chorus::recv_count(c.collective, c.count, n);
  std::vector<std::vector<T>> outputs(static_cast<std::size_t>(n), std::vector<T>(recvs, harness::sentinel<T>()));
  std::vector<const T*> in_ptr;
  std::vector<T*> out_ptr;
  for (int r = 0; r < n; ++r) {
    in_ptr.push_back(inputs[static_cast<std::size_t>(r)].data());
    const bool writes = c.collective != Collective::reduce || r == c.root;
    out_ptr.push_back(writes ? outputs[static_cast<std::size_t>(r)].data() : nullptr);
  }
  twin_call<T>(team, c, in_ptr, out_ptr);

  std::vector<std::vector<std::vector<T>>> per_ring;
  for (const std::vector<int>& order : orders) per_ring.push_back(host_outputs<T>(c, order, inputs));
  const std::vector<int> owner = owners(c.collective, c.count, n);
  bool rings_mattered = false;
  for (int r = 0; r < n; ++r) {
    if (c.collective == Collective::reduce && r != c.root) continue;
    const auto i = static_cast<std::size_t>(r);
    std::vector<T> expected(recvs);
    for (std::size_t e = 0; e < recvs; ++e) {
      const auto ring = static_cast<std::size_t>(kernel::ring_of_block(owner[e], static_cast<int>(orders.size())));
      expected[e] = per_ring[ring][i][e];
    }
    rings_mattered = rings_mattered || bytes_of(expected) != bytes_of(per_ring[0][i]);
    INFO(chorus::to_string(c.collective) << " " << to_string(c.algorithm) << " " << harness::type_name<T>() << " ranks " << n
                                         << " count " << c.count << " root " << c.root << " rank " << r);
    REQUIRE(first_difference(bytes_of(outputs[i]), bytes_of(expected)) == -1);
  }
  return rings_mattered;
}

}  // namespace

TEST_CASE("the ring table: a rank's place on each ring, and the ring each block runs on") {
  const int order[] = {2, 0, 3, 1};
  const kernel::RingView ring = kernel::make_ring_view(order, 4, 3);
  CHECK(ring.position == 2);
  CHECK(ring.next == 1);
  CHECK(ring.prev == 0);
  const kernel::RingView first = kernel::make_ring_view(order, 4, 2);  // wraps at both ends
  CHECK(first.position == 0);
  CHECK(first.next == 0);
  CHECK(first.prev == 1);
  for (int p = 0; p < 4; ++p) CHECK(ring.order[p] == order[p]);

  CHECK(kernel::ring_of_block(5, 3) == 2);
  CHECK(kernel::ring_of_block(5, 1) == 0);
  CHECK(kernel::ring_of_block(2, 8) == 2);

  kernel::RankView view{};
  view.rank = 1;
  view.nranks = 3;
  chorus::cuda::fill_rings(view, {{0, 1, 2}, {2, 1, 0}});
  REQUIRE(view.rings == 2);
  CHECK(view.ring(0).next == 2);  // 0 -> 1 -> 2
  CHECK(view.ring(1).next == 0);  // 2 -> 1 -> 0
  CHECK(view.ring(2).next == 2);  // block 2 back on ring 0
  CHECK(view.ring(3).prev == 2);
  CHECK(&view.ring(7) == &view.ring_table[1]);
}

TEST_CASE("ring all_reduce, all_gather, reduce_scatter and chain broadcast/reduce with a different ring per block") {
  const Collective collectives[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                    Collective::broadcast, Collective::reduce};
  for (int n : {2, 3, 5, 8}) {
    Team team(n, ring_options(three_rings(n)));  // one team: every call continues the same FIFO counters
    for (std::size_t count : {std::size_t{5}, std::size_t{700}}) {
      for (Collective collective : collectives) {
        Call c{collective, KernelAlgorithm::ring, count};
        c.root = n - 1;
        const auto seed = static_cast<std::uint32_t>(count + static_cast<std::size_t>(n));
        const bool mattered = check_multi_ring<float>(team, c, seed);
        // From four ranks the rings fold in different orders (with three, only the first two terms of a fold
        // trade places, which float addition allows): then the reference itself proves that the twin's bits
        // are those of each block's own ring, not of one ring for all.
        if (n >= 4 && count == 700 && chorus::traits(collective).reduces) CHECK(mattered);
        check_multi_ring<int>(team, c, seed);
      }
    }
  }
}

TEST_CASE("bad ring_orders are refused naming the ring and the value") {
  const auto refused = [](RingOrders orders, int n, const std::string& text) {
    Options options;
    options.ring_orders = std::move(orders);
    try {
      Team team(n, options);
    } catch (const chorus::Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains("chorus::cuda::twin::Team: " + text));
      return;
    }
    FAIL("no error for " << text);
  };
  refused(RingOrders(9, std::vector<int>{0, 1}), 2, "ring_orders must hold 1..8 rings, got 9");
  refused({{0, 1, 2}, {0, 2}}, 3, "ring_orders[1] has 2 entries for 3 ranks");
  refused({{0, 1, 2}, {2, 1, 0}, {0, 1, 1}}, 3, "ring_orders[2] must be a permutation of 0..2: entry 2 is 1 (repeated)");
  refused({{0, 3, 1}}, 3, "ring_orders[0] must be a permutation of 0..2: entry 1 is 3 (not a rank)");
  refused({{-1, 0, 1}}, 3, "ring_orders[0] must be a permutation of 0..2: entry 0 is -1 (not a rank)");
  // Eight rings is the limit, not past it; empty means one identity ring.
  CHECK(Team(2, ring_options(RingOrders(8, std::vector<int>{1, 0}))).options().ring_orders.size() == 8);
  CHECK(Team(3).ring_orders() == RingOrders{{0, 1, 2}});
}

}  // namespace test_twin_rings
