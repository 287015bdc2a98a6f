// The CUDA kernels of broadcast, reduce, all_gather, reduce_scatter and all_to_all, run on the CPU twin
// (a thread per lane) against the host backend running the schedule each kernel implements: every rank
// must get exactly the host's bits, for every collective and kernel, rank counts 2-8, awkward counts (0,
// 1, fewer than the ranks, odd, more than one staging round and many FIFO slots), in place, with seeded
// skew, and for calls of different collectives one after another on one team.
#include <catch2/catch.hpp>

#include "collective_checks.hpp"

#include <numeric>

namespace test_twin_collectives {

using namespace collective_checks;
using chorus::ErrorCode;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Team;

namespace {

std::vector<int> identity_order(int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// Small buffers: 2 blocks x 2 KiB of staging and 64-byte FIFO slots, so the larger counts below take
// several staging rounds and many FIFO slot reuses.
Options small_options(int blocks, int lanes, std::vector<int> order = {}, std::uint32_t seed = 0) {
  Options options;
  options.blocks = blocks;
  options.threads = lanes;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;
  options.fifo_depth = 2;
  if (!order.empty()) options.ring_orders = {std::move(order)};
  options.delay_seed = seed;
  return options;
}

template <class T>
std::vector<std::vector<T>> sensitive_inputs(const Call& c, int n, std::uint32_t seed) {
  std::vector<std::vector<T>> inputs;
  for (int r = 0; r < n; ++r) inputs.push_back(order_sensitive<T>(r, chorus::send_count(c.collective, c.count, n), seed));
  return inputs;
}

template <class T>
void require_same(const Result& got, const Call& c, int n) {
  for (int r = 0; r < n; ++r) {
    INFO(chorus::to_string(c.collective) << " " << to_string(c.algorithm) << " " << harness::type_name<T>() << " "
                                         << chorus::to_string(c.op) << " ranks " << n << " count " << c.count << " root "
                                         << c.root << " in place " << c.in_place << " rank " << r);
    REQUIRE(first_difference(got.outputs.twin[static_cast<std::size_t>(r)], got.outputs.host[static_cast<std::size_t>(r)]) == -1);
  }
  INFO(chorus::to_string(c.collective) << " wrote a non-root's output");
  REQUIRE(got.untouched);
}

}  // namespace

TEST_CASE("every collective and kernel matches the host's bits for 2-8 ranks and awkward counts") {
  for (int n : {2, 3, 4, 5, 8}) {
    // One team for everything: barrier counters and FIFO counters carry over between collectives.
    Team team(n, small_options(2, 3, {}, n == 5 ? 777u : 0u));
    // 0; 1; fewer than the ranks; odd; more than one staging round (1024 floats per round and block pair
    // for one part, fewer for n parts) and dozens of 16-float FIFO slots.
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(n - 1), std::size_t{37}, std::size_t{1100}}) {
      for (const Pair& pair : kPairs) {
        Call c{pair.collective, pair.algorithm, count};
        c.root = n - 1 - static_cast<int>(count % 2);
        c.in_place = count % 2 == 1;
        const auto inputs = sensitive_inputs<float>(c, n, static_cast<std::uint32_t>(count + 1));
        require_same<float>(run_collective(team, identity_order(n), inputs, c), c, n);
      }
    }
  }
}

TEST_CASE("the ring kernels follow the ring order and fold in the host ring's order") {
  const std::vector<int> order = {3, 0, 4, 2, 1};
  for (int blocks : {1, 3}) {
    Team team(5, small_options(blocks, 2, order, 99));
    for (Collective collective : {Collective::all_gather, Collective::reduce_scatter}) {
      for (std::size_t count : {std::size_t{4}, std::size_t{333}}) {
        Call c{collective, KernelAlgorithm::ring, count};
        c.in_place = blocks == 3;
        const auto inputs = sensitive_inputs<float>(c, 5, 5);
        require_same<float>(run_collective(team, order, inputs, c), c, 5);
      }
    }
  }
  // The check has power: for these inputs the ring's fold order and rank order give different bits.
  Team team(5, small_options(1, 2, order));
  Call ring{Collective::reduce_scatter, KernelAlgorithm::ring, 333};
  Call direct{Collective::reduce_scatter, KernelAlgorithm::one_shot, 333};
  const auto inputs = sensitive_inputs<float>(ring, 5, 5);
  CHECK(run_collective(team, order, inputs, ring).outputs.twin != run_collective(team, order, inputs, direct).outputs.twin);
}

TEST_CASE("all ten types and five ops on the staged kernels, a few types on the ring") {
  Team team(3, small_options(2, 2));
  harness::for_each_type([&](auto type, int) {
    using T = decltype(type);
    for (const Pair& pair : kPairs) {
      const bool reduces = chorus::traits(pair.collective).reduces;
      for (ReduceOp op : harness::kOps) {
        if (!reduces && op != ReduceOp::sum) continue;
        if (pair.algorithm == KernelAlgorithm::ring && !(std::is_same<T, chorus::half>::value ||
                                                         std::is_same<T, chorus::bfloat16>::value ||
                                                         std::is_same<T, std::int8_t>::value || std::is_same<T, double>::value)) {
          continue;
        }
        Call c{pair.collective, pair.algorithm, 37, op, 1};
        std::vector<std::vector<T>> inputs;
        for (int r = 0; r < 3; ++r) inputs.push_back(harness::inputs<T>(op, r, chorus::send_count(c.collective, c.count, 3)));
        require_same<T>(run_collective(team, identity_order(3), inputs, c), c, 3);
      }
    }
  });
}

TEST_CASE("collectives: half and bfloat16 fold with the host's per-step rounding") {
  Team team(8, small_options(2, 2));
  for (const Pair& pair : kPairs) {
    if (!chorus::traits(pair.collective).reduces) continue;
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
      Call c{pair.collective, pair.algorithm, 77, op, 5};
      require_same<chorus::half>(run_collective(team, identity_order(8), sensitive_inputs<chorus::half>(c, 8, 7), c), c, 8);
      c.in_place = true;
      require_same<chorus::bfloat16>(run_collective(team, identity_order(8), sensitive_inputs<chorus::bfloat16>(c, 8, 9), c), c, 8);
    }
  }
}

TEST_CASE("calls of different collectives in a row on one team, with seeded skew") {
  Team team(4, small_options(3, 4, {}, 4242));
  const Call sequence[] = {
      {Collective::all_reduce, KernelAlgorithm::ring, 900},       {Collective::all_gather, KernelAlgorithm::one_shot, 300},
      {Collective::broadcast, KernelAlgorithm::one_shot, 1500, ReduceOp::sum, 2},
      {Collective::reduce_scatter, KernelAlgorithm::ring, 250},   {Collective::all_reduce, KernelAlgorithm::one_shot, 2000},
      {Collective::all_gather, KernelAlgorithm::ring, 17},        {Collective::reduce, KernelAlgorithm::one_shot, 999, ReduceOp::max, 3},
      {Collective::all_reduce, KernelAlgorithm::ll_one_shot, 64}, {Collective::all_to_all, KernelAlgorithm::one_shot, 130},
      {Collective::all_reduce, KernelAlgorithm::two_shot, 700},   {Collective::reduce_scatter, KernelAlgorithm::one_shot, 301}};
  for (int repeat = 0; repeat < 2; ++repeat) {
    for (Call c : sequence) {
      c.in_place = repeat == 1;
      require_same<double>(run_collective(team, identity_order(4), sensitive_inputs<double>(c, 4, 11), c), c, 4);
    }
  }
}

TEST_CASE("a rank that skips a collective: the others time out with a record") {
  for (const Pair& pair : {kPairs[0], kPairs[3]}) {
    std::vector<std::vector<float>> in(3, std::vector<float>(300, 1.0f)), out(3, std::vector<float>(900));
    std::vector<const float*> in_ptr;
    std::vector<float*> out_ptr;
    for (int r = 0; r < 3; ++r) {
      in_ptr.push_back(in[static_cast<std::size_t>(r)].data());
      out_ptr.push_back(out[static_cast<std::size_t>(r)].data());
    }
    std::string message;
    ErrorCode code = ErrorCode::internal;
    try {
      const support::ScopedEnv timeout("CHORUS_KERNEL_TIMEOUT_MS", "300");
      Team team(3, small_options(1, 2));  // its kernels' bound is read when the team is made
      team.collective_with<float>(pair.collective, in_ptr, out_ptr, 300, ReduceOp::sum, 0, pair.algorithm, {}, {true, false, true});
      team.synchronize();  // the timeout shows here: the call only enqueued the launch
    } catch (const chorus::Error& e) {
      message = e.what();
      code = e.code();
    }
    INFO(message);
    CHECK(code == ErrorCode::timeout);
    CHECK(message.find(std::string("cuda::twin::Team::") + chorus::to_string(pair.collective)) != std::string::npos);
    CHECK(message.find("waited 300 ms for rank") != std::string::npos);
  }
}

TEST_CASE("bad arguments of the collectives are refused with the call, the rank and the value") {
  Team team(3);
  std::vector<float> a(12), b(12), c(12);
  const std::vector<const float*> in = {a.data(), b.data(), c.data()};
  const std::vector<float*> out = {a.data(), b.data(), c.data()};
  const auto refused = [](auto&& fn, ErrorCode code, const std::string& text) {
    try {
      fn();
    } catch (const chorus::Error& e) {
      INFO(e.what());
      CHECK(e.code() == code);
      CHECK(std::string(e.what()).find(text) != std::string::npos);
      return;
    }
    FAIL("no error for " << text);
  };
  // The Algorithm each call names is mapped to a kernel as on a GPU (kernel_for_call): what it means on
  // every backend (chorus::supports), or refused.
  const auto direct = Algorithm::direct;
  const auto chain = Algorithm::chain;
  refused([&] { team.broadcast<float>(in, out, 4, 3, chain); }, ErrorCode::invalid_argument,
          "cuda::twin::Team::broadcast on rank 0: root 3 is not a rank of 3");
  refused([&] { team.reduce<float>(in, out, 4, ReduceOp::sum, -1); }, ErrorCode::invalid_argument,
          "cuda::twin::Team::reduce on rank 0: root -1 is not a rank of 3");
  refused([&] { team.broadcast<float>({a.data(), nullptr, nullptr}, {a.data(), nullptr, c.data()}, 4, 0); },
          ErrorCode::invalid_argument, "cuda::twin::Team::broadcast on rank 1: null buffer with count 4 (the output)");
  refused([&] { team.reduce<float>({a.data(), nullptr, c.data()}, out, 4, ReduceOp::sum, 0, chain); },
          ErrorCode::invalid_argument, "cuda::twin::Team::reduce on rank 1: null buffer with count 4 (the input)");
  refused([&] { team.all_gather<float>(in, {a.data(), b.data(), nullptr}, 4, Algorithm::ring); },
          ErrorCode::invalid_argument, "cuda::twin::Team::all_gather on rank 2: null buffer with count 4 (the output)");
  // The byte size fits for one block but not for n of them.
  const std::size_t too_many = SIZE_MAX / sizeof(float) / 2;
  refused([&] { team.all_gather<float>(in, out, too_many, direct); }, ErrorCode::invalid_argument, "x 3 blocks overflows the byte size");
  refused([&] { team.reduce_scatter<float>(in, out, too_many, ReduceOp::sum, Algorithm::ring); },
          ErrorCode::invalid_argument, "cuda::twin::Team::reduce_scatter: count");
  // An explicit kernel that does not serve the collective, and Algorithms whose meaning excludes it.
  refused([&] { team.collective_with<float>(Collective::broadcast, in, out, 4, ReduceOp::sum, 0, KernelAlgorithm::tree); },
          ErrorCode::unsupported, "cuda::twin::Team::broadcast: no tree kernel for broadcast");
  refused([&] { team.collective_with<float>(Collective::all_gather, in, out, 4, ReduceOp::sum, 0, KernelAlgorithm::two_shot); },
          ErrorCode::unsupported, "no two_shot kernel for all_gather");
  refused([&] { team.broadcast<float>(in, out, 4, 0, Algorithm::ring); }, ErrorCode::invalid_argument,
          "algorithm ring does not implement broadcast (choose from automatic, chain, binomial)");
  refused([&] { team.all_gather<float>(in, out, 4, Algorithm::one_shot); }, ErrorCode::invalid_argument,
          "algorithm one_shot does not implement all_gather");
  refused([&] { team.reduce<float>(in, out, 4, ReduceOp::sum, 0, Algorithm::binomial); }, ErrorCode::unsupported,
          "algorithm binomial has no CUDA kernel");
  refused([&] { team.all_reduce<float>(in, out, 4, ReduceOp::sum, Algorithm::halving_doubling); }, ErrorCode::unsupported,
          "algorithm halving_doubling has no CUDA kernel");
  refused([&] { team.all_to_all<float>({a.data()}, {b.data()}, 4); }, ErrorCode::invalid_argument,
          "one input and one output per rank (3), got 1 and 1");
  // The runtime's argument check runs on every rank's buffers: an op that is not a ReduceOp, and buffers
  // that overlap other than in place.
  refused([&] { team.all_reduce<float>(in, out, 4, static_cast<ReduceOp>(9)); }, ErrorCode::invalid_argument,
          "cuda::twin::Team::all_reduce on rank 0: ");
  refused([&] { team.all_reduce<float>(in, {a.data() + 1, b.data(), c.data()}, 4, ReduceOp::sum); }, ErrorCode::invalid_argument,
          "cuda::twin::Team::all_reduce on rank 0: ");
  // Refused calls left the team usable, and a broadcast's non-root inputs and a reduce's non-root outputs
  // may be null.
  a.assign(12, 2.5f);
  team.broadcast<float>({a.data(), nullptr, nullptr}, {a.data(), b.data(), c.data()}, 4, 0, chain);
  team.synchronize();
  CHECK(b[3] == 2.5f);
  CHECK(c[0] == 2.5f);
  team.reduce<float>({a.data(), b.data(), c.data()}, {nullptr, nullptr, c.data()}, 4, ReduceOp::sum, 2);
  team.synchronize();
  CHECK(c[3] == 7.5f);
}

}  // namespace test_twin_collectives
