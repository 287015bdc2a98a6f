// The CUDA all-reduce kernels, run on the CPU twin (a thread per lane), against the host backend
// running the schedule each kernel implements: every rank must get exactly the host's bits, for every
// type, op, rank count, awkward size, alignment, in place or not, over several calls in a row.
#include <catch2/catch.hpp>

#include "twin_checks.hpp"

#include <numeric>

namespace test_twin_all_reduce {

using namespace twin_checks;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Team;

namespace {

std::vector<int> identity_order(int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// Small buffers, so that the sizes below take several rounds, pieces and slot reuses.
Options small_options(int blocks, int lanes, std::vector<int> order = {}) {
  Options options;
  options.blocks = blocks;
  options.threads = lanes;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;
  options.fifo_depth = 2;
  if (!order.empty()) options.ring_orders = {std::move(order)};
  return options;
}

}  // namespace

TEST_CASE("every kernel matches the host's bits for every type and op") {
  for (KernelAlgorithm algorithm : kKernelAlgorithms) {
    for (int n : {1, 2, 3, 4}) {
      Team team(n, small_options(2, 3));
      harness::for_each_type([&](auto type, int) {
        using T = decltype(type);
        for (ReduceOp op : harness::kOps) {
          for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1027}}) {
            std::vector<std::vector<T>> inputs;
            for (int r = 0; r < n; ++r) inputs.push_back(harness::inputs<T>(op, r, count));
            const Outputs got = run_both(team, identity_order(n), inputs, op, algorithm, count % 2 == 1);
            const auto expected = harness::reference<T>(op, n, count);
            for (int r = 0; r < n; ++r) {
              INFO(to_string(algorithm) << " " << harness::type_name<T>() << " " << chorus::to_string(op) << " ranks " << n
                                        << " count " << count << " rank " << r);
              REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.host[static_cast<std::size_t>(r)]) == -1);
              REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], bytes_of(expected)) == -1);
            }
          }
        }
      });
    }
  }
}

TEST_CASE("fold order: order-sensitive floats give the host schedule's exact bits on every rank") {
  const std::vector<std::vector<int>> orders = {{0, 1, 2, 3, 4}, {3, 0, 4, 2, 1}};
  for (KernelAlgorithm algorithm : kKernelAlgorithms) {
    for (const auto& order : orders) {
      for (int blocks : {1, 3}) {
        Team team(5, small_options(blocks, 4, order));
        for (std::size_t count : {std::size_t{5}, std::size_t{33}, std::size_t{2053}}) {
          for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
            std::vector<std::vector<float>> inputs;
            for (int r = 0; r < 5; ++r) inputs.push_back(order_sensitive<float>(r, count, static_cast<std::uint32_t>(count)));
            const Outputs got = run_both(team, order, inputs, ReduceOp::sum, algorithm, offset == 1, offset);
            for (int r = 0; r < 5; ++r) {
              INFO(to_string(algorithm) << " blocks " << blocks << " count " << count << " offset " << offset << " rank " << r
                                        << " order " << order[1]);
              REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.host[static_cast<std::size_t>(r)]) == -1);
              REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.twin[0]) == -1);
            }
          }
        }
      }
    }
  }
  // The check has power: the ring's and one-shot's orders give different bits for these inputs.
  Team team(5, small_options(1, 2));
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < 5; ++r) inputs.push_back(order_sensitive<float>(r, 2053, 2053));
  const Outputs ring = run_both(team, identity_order(5), inputs, ReduceOp::sum, KernelAlgorithm::ring, false);
  const Outputs one_shot = run_both(team, identity_order(5), inputs, ReduceOp::sum, KernelAlgorithm::one_shot, false);
  CHECK(ring.twin[0] != one_shot.twin[0]);
}

TEST_CASE("half and bfloat16 fold with the host's per-step rounding") {
  for (KernelAlgorithm algorithm : kKernelAlgorithms) {
    Team team(8, small_options(2, 2));
    std::vector<std::vector<chorus::half>> halves;
    std::vector<std::vector<chorus::bfloat16>> brains;
    for (int r = 0; r < 8; ++r) {
      halves.push_back(order_sensitive<chorus::half>(r, 777, 7));
      brains.push_back(order_sensitive<chorus::bfloat16>(r, 777, 9));
    }
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
      const Outputs h = run_both(team, identity_order(8), halves, op, algorithm, false);
      const Outputs b = run_both(team, identity_order(8), brains, op, algorithm, true, 3);
      for (int r = 0; r < 8; ++r) {
        INFO(to_string(algorithm) << " " << chorus::to_string(op) << " rank " << r);
        CHECK(first_difference(h.twin[static_cast<std::size_t>(r)], h.host[static_cast<std::size_t>(r)]) == -1);
        CHECK(first_difference(b.twin[static_cast<std::size_t>(r)], b.host[static_cast<std::size_t>(r)]) == -1);
      }
    }
  }
}

TEST_CASE("calls of changing sizes in a row, with seeded skew between ranks") {
  for (KernelAlgorithm algorithm : kKernelAlgorithms) {
    Options options = small_options(3, 4);
    options.delay_seed = 12345;
    Team team(6, options);
    for (std::size_t count : {std::size_t{3000}, std::size_t{1}, std::size_t{0}, std::size_t{64}, std::size_t{2999},
                              std::size_t{17}, std::size_t{4096}}) {
      std::vector<std::vector<double>> inputs;
      for (int r = 0; r < 6; ++r) inputs.push_back(order_sensitive<double>(r, count, 3));
      const Outputs got = run_both(team, identity_order(6), inputs, ReduceOp::sum, algorithm, false);
      for (int r = 0; r < 6; ++r) {
        INFO(to_string(algorithm) << " count " << count << " rank " << r);
        REQUIRE(first_difference(got.twin[static_cast<std::size_t>(r)], got.host[static_cast<std::size_t>(r)]) == -1);
      }
    }
  }
}

}  // namespace test_twin_all_reduce
