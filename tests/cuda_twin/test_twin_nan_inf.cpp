// NaN and Inf through every all_reduce kernel on the CPU twin, called through the per-rank view
// (team.comm(r), one thread per rank, wait() before reading), as docs/communicator.md promises them: every
// rank holds the same bits, although in the one-shot kernels each rank folds for itself, and through
// another code path where its buffers are misaligned (scalar instead of 16-byte packs: before chorus
// canonicalised computed NaNs, half sums of two NaNs differed between such ranks); an element is NaN exactly
// where IEEE makes it NaN, and then the canonical NaN, and otherwise has the reference's bits; min and max
// follow the rule in docs/errors.md bit for bit. The kernels are reached through the Algorithm that maps to them
// (cuda/kernel_choice.hpp): LL through automatic at a size under crossovers.ll_max.
#include <catch2/catch.hpp>

#include <chorus/cuda/kernel_choice.hpp>
#include <chorus/cuda/twin/twin_team.hpp>

#include "support/nan_inf_values.hpp"

#include <cstddef>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace test_twin_nan_inf {

namespace {

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::cuda::kernel::KernelAlgorithm;

constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};

// Each kernel and the Algorithm that reaches it at kCount elements of any of the four types.
struct Route {
  Algorithm algorithm;
  KernelAlgorithm kernel;
};
constexpr Route kRoutes[] = {{Algorithm::automatic, KernelAlgorithm::ll_one_shot},
                             {Algorithm::one_shot, KernelAlgorithm::one_shot},
                             {Algorithm::two_shot, KernelAlgorithm::two_shot},
                             {Algorithm::ring, KernelAlgorithm::ring},
                             {Algorithm::tree, KernelAlgorithm::tree}};

// Packs, heads and tails at every alignment; several LL rounds, ring pieces and FIFO slot reuses with the
// small buffers below; and under crossovers.ll_max (16 KiB) in double.
constexpr std::size_t kCount = 301;

chorus::cuda::twin::Options small_options() {
  chorus::cuda::twin::Options options;
  options.blocks = 2;
  options.threads = 2;
  options.staging_bytes = 4096;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 64;
  options.fifo_depth = 2;
  return options;
}

struct Case {
  Route route;
  ReduceOp op;
  bool in_place;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Route& route : kRoutes) {
    for (ReduceOp op : kOps) {
      for (bool in_place : {false, true}) cases.push_back(Case{route, op, in_place});
    }
  }
  return cases;
}

// Every case at one rank count, every rank on its own thread; the failures, as text.
template <class T>
std::vector<std::string> check_kernels(int ranks) {
  const std::vector<Case> cases = all_cases();
  const auto n = static_cast<std::size_t>(ranks);
  // Rank r's buffers start r % 2 elements in, so odd ranks are misaligned for the kernels' packs. Every
  // buffer lives until the main thread has read it (a device communicator's calls may run after return).
  std::vector<std::vector<std::vector<T>>> in(cases.size(), std::vector<std::vector<T>>(n));
  std::vector<std::vector<std::vector<T>>> out(cases.size(), std::vector<std::vector<T>>(n));
  std::vector<std::vector<std::string>> errors(n);  // per rank: Catch2 assertions are not thread-safe
  chorus::cuda::twin::Team team(ranks, small_options());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      const auto rank = static_cast<std::size_t>(r);
      const std::size_t skew = rank % 2;
      try {
        auto comm = team.comm(r);
        for (std::size_t c = 0; c < cases.size(); ++c) {
          const Case& k = cases[c];
          std::vector<T>& send = in[c][rank];
          std::vector<T>& recv = out[c][rank];
          send.assign(skew, T{});
          const std::vector<T> values = nan_inf::inputs<T>(k.op, ranks, r, kCount);
          send.insert(send.end(), values.begin(), values.end());
          recv.assign(kCount + skew, T{});
          T* result = k.in_place ? send.data() + skew : recv.data() + skew;
          comm.all_reduce(send.data() + skew, result, kCount, k.op, k.route.algorithm);
          comm.wait();
        }
      } catch (const std::exception& e) {
        errors[rank].push_back("rank " + std::to_string(r) + " threw: " + e.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::string> failures;
  for (const std::vector<std::string>& e : errors) failures.insert(failures.end(), e.begin(), e.end());
  if (!failures.empty()) return failures;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    const std::string what = std::string(chorus::to_string(chorus::data_type_v<T>)) + " " + chorus::to_string(k.op) + " " +
                             chorus::cuda::kernel::to_string(k.route.kernel) + " ranks " + std::to_string(ranks) +
                             (k.in_place ? " in place" : "");
    std::vector<const T*> per_rank;
    for (std::size_t r = 0; r < n; ++r) per_rank.push_back((k.in_place ? in : out)[c][r].data() + r % 2);
    nan_inf::check_same_bits(what, per_rank, kCount, failures);
    nan_inf::check_reduced(what, k.op, ranks, per_rank[0], kCount, 0, failures);
  }
  return failures;
}

template <class T>
void every_kernel_and_rank_count() {
  for (int ranks = 2; ranks <= 5; ++ranks) {
    for (const Route& route : kRoutes) {  // the routes reach the kernels they name
      INFO(chorus::to_string(route.algorithm) << " at " << ranks << " ranks");
      CHECK(chorus::cuda::kernel_for(route.algorithm, kCount * sizeof(T), ranks, small_options().crossovers) == route.kernel);
    }
    const std::vector<std::string> failures = check_kernels<T>(ranks);
    INFO(chorus::to_string(chorus::data_type_v<T>) << " at " << ranks << " ranks");
    CHECK(failures == std::vector<std::string>{});
  }
}

}  // namespace

TEST_CASE("twin kernels with NaN and Inf: float", "[nan]") { every_kernel_and_rank_count<float>(); }
TEST_CASE("twin kernels with NaN and Inf: double", "[nan]") { every_kernel_and_rank_count<double>(); }
TEST_CASE("twin kernels with NaN and Inf: half", "[nan]") { every_kernel_and_rank_count<chorus::half>(); }
TEST_CASE("twin kernels with NaN and Inf: bfloat16", "[nan]") { every_kernel_and_rank_count<chorus::bfloat16>(); }

}  // namespace test_twin_nan_inf
