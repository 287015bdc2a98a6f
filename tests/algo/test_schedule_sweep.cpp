// Every schedule generator, proved correct by the symbolic verifier for n = 1..64 ranks and
// awkward counts (empty, smaller than n, primes), in place and out of place, with a scrambled
// ring order for the ring-ordered patterns and several roots for the rooted ones. Small slices
// multiply the step count by up to count/2, so they run for every n up to 16 and a sample above.
// Under the sanitizers (support/sanitizers.hpp) every n up to 24 and the same sample above run: the
// schedules are the same code at every n, and the full range is proved by the release stage.
#include <chorus/algo/build.hpp>
#include <chorus/algo/printer.hpp>
#include <chorus/algo/verifier.hpp>

#include <catch2/catch.hpp>

#include "support/sanitizers.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

namespace test_schedule_sweep {

namespace {

using namespace chorus::algo;

const std::vector<std::pair<Collective, Pattern>> kSupported = {
    {Collective::all_reduce, Pattern::ring},         {Collective::all_reduce, Pattern::tree},
    {Collective::all_reduce, Pattern::halving_doubling}, {Collective::all_reduce, Pattern::one_shot},
    {Collective::all_reduce, Pattern::two_shot},     {Collective::reduce_scatter, Pattern::ring},
    {Collective::reduce_scatter, Pattern::direct},   {Collective::all_gather, Pattern::ring},
    {Collective::all_gather, Pattern::direct},       {Collective::broadcast, Pattern::chain},
    {Collective::broadcast, Pattern::binomial},      {Collective::reduce, Pattern::chain},
    {Collective::reduce, Pattern::binomial},         {Collective::all_to_all, Pattern::pairwise},
};

// A ring order that is not the identity: stride through the ranks with a step coprime to n.
std::vector<int> scrambled_order(int n) {
  int stride = n / 2 + 1;
  while (n > 1 && std::gcd(stride, n) != 1) ++stride;
  std::vector<int> order;
  for (int k = 0; k < n; ++k) order.push_back((k * stride + n - 1) % n);
  return order;
}

std::vector<std::size_t> counts_for(int n) {
  const auto u = static_cast<std::size_t>(n);
  return {0, 1, 2, 3, 7, 13, u - 1, u, u + 1, 2 * u + 3, 97};
}

std::vector<int> roots_for(Collective collective, int n) {
  if (collective != Collective::broadcast && collective != Collective::reduce) return {0};
  std::vector<int> roots = {0, n - 1, n / 2};
  if (n > 3) roots.push_back(1);
  return roots;
}

// Verifies every supported (collective, pattern) on n ranks with the given slice; returns how
// many schedules it proved.
int sweep(int n, std::size_t slice) {
  int proved = 0;
  for (const auto& [collective, pattern] : kSupported) {
    const bool ordered = pattern == Pattern::ring || pattern == Pattern::chain;
    for (const std::size_t count : counts_for(n)) {
      for (const int root : roots_for(collective, n)) {
        for (const bool in_place : {false, true}) {
          for (const bool scramble : {false, true}) {
            if (scramble && !ordered) continue;
            Options options;
            options.in_place = in_place;
            options.slice = slice;
            if (scramble) options.ring_order = scrambled_order(n);
            const Schedule schedule = build(collective, pattern, n, count, root, options);
            const Verdict verdict = verify(schedule);
            if (!verdict.ok) {
              INFO(summary(schedule) << ", slice " << slice << (scramble ? ", scrambled ring order" : ""));
              INFO(verdict.problem);
              REQUIRE(verdict.ok);
            }
            ++proved;
          }
        }
      }
    }
  }
  return proved;
}

}  // namespace

TEST_CASE("scrambled ring orders are permutations other than the identity") {
  for (int n = 3; n <= 64; ++n) {
    std::vector<int> order = scrambled_order(n);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> identity(static_cast<std::size_t>(n));
    std::iota(identity.begin(), identity.end(), 0);
    CHECK(sorted == identity);
    CHECK(order != identity);
  }
}

// Beyond this many ranks, a sample of sizes (powers of two, their neighbours, primes).
constexpr int kEveryRankUpTo = chorus::test::kSanitized ? 24 : 64;
const std::vector<int> kSampledRanks = {31, 32, 33, 47, 63, 64};

TEST_CASE("every generator is proved correct for 1..64 ranks with whole chunks", "[sweep]") {
  int proved = 0;
  for (int n = 1; n <= kEveryRankUpTo; ++n) proved += sweep(n, 0);
  for (const int n : kSampledRanks) {
    if (n > kEveryRankUpTo) proved += sweep(n, 0);
  }
  CHECK(proved > (chorus::test::kSanitized ? 5000 : 20000));
}

TEST_CASE("every generator is proved correct with small slices", "[sweep]") {
  for (int n = 1; n <= 16; ++n) {
    sweep(n, 2);
    sweep(n, 3);
  }
  for (const int n : {17, 23, 31, 32, 33, 47, 64}) sweep(n, 3);
}

}  // namespace test_schedule_sweep
