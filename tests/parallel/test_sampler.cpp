// DistributedSampler: PyTorch's documented index lists (N=10, W=3), its padding and drop_last rules
// over a sweep against a transcription of torch/utils/data/distributed.py, the seeded shuffle, and
// the cross-rank properties on host threads and the mailbox fake.
#include <catch2/catch.hpp>

#include <chorus/host.hpp>
#include <chorus/parallel/distributed_sampler.hpp>

#include "support/data_parallel_checks.hpp"
#include "support/run_on_every_communicator.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace test_sampler {

using chorus::parallel::DistributedSampler;
using chorus::parallel::SamplerOptions;
using Indices = std::vector<std::size_t>;

namespace {

constexpr SamplerOptions kInOrder{false, 0, false};
constexpr SamplerOptions kInOrderDropLast{false, 0, true};

// PyTorch's __iter__ with shuffle=False, step by step (torch/utils/data/distributed.py, DistributedSampler).
Indices torch_indices(std::size_t n, std::size_t w, std::size_t rank, bool drop_last) {
  const std::size_t num_samples = drop_last && n % w != 0 ? (n - w + w - 1) / w  // ceil((N - W) / W), N >= W
                                                          : (n + w - 1) / w;
  const std::size_t total = num_samples * w;
  Indices indices(n);
  for (std::size_t i = 0; i < n; ++i) indices[i] = i;
  if (!drop_last) {
    const std::size_t padding = total - n;
    Indices repeated;
    if (padding <= n) {
      repeated.assign(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(padding));
    } else {
      const std::size_t copies = (padding + n - 1) / n;  // indices * ceil(padding / N), then [:padding]
      for (std::size_t c = 0; c < copies; ++c) repeated.insert(repeated.end(), indices.begin(), indices.end());
      repeated.resize(padding);
    }
    indices.insert(indices.end(), repeated.begin(), repeated.end());
  } else {
    indices.resize(total);
  }
  Indices mine;
  for (std::size_t i = rank; i < total; i += w) mine.push_back(indices[i]);
  return mine;
}

}  // namespace

TEST_CASE("DistributedSampler gives PyTorch's lists for N=10, W=3", "[parallel][sampler]") {
  const std::vector<Indices> padded = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  const std::vector<Indices> dropped = {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}};
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    DistributedSampler sampler(10, 3, r, kInOrder);
    CHECK(sampler.num_samples() == 4);
    CHECK(sampler.total_size() == 12);
    CHECK(sampler.indices() == padded[static_cast<std::size_t>(r)]);
    DistributedSampler drop(10, 3, r, kInOrderDropLast);
    CHECK(drop.num_samples() == 3);
    CHECK(drop.indices() == dropped[static_cast<std::size_t>(r)]);
  }
}

TEST_CASE("DistributedSampler without shuffle matches PyTorch's algorithm for every N < 40, W <= 7",
          "[parallel][sampler]") {
  for (std::size_t n = 0; n < 40; ++n) {
    for (int w = 1; w <= 7; ++w) {
      for (bool drop_last : {false, true}) {
        if (drop_last && n < static_cast<std::size_t>(w) && n % static_cast<std::size_t>(w) != 0) {
          // PyTorch: ceil((N - W) / W) with N < W is ceil of a negative fraction above -1: zero samples.
          CHECK(DistributedSampler(n, w, 0, kInOrderDropLast).num_samples() == 0);
          continue;
        }
        for (int r = 0; r < w; ++r) {
          INFO("N=" << n << " W=" << w << " rank " << r << (drop_last ? " drop_last" : ""));
          const DistributedSampler sampler(n, w, r, drop_last ? kInOrderDropLast : kInOrder);
          CHECK(sampler.indices() ==
                torch_indices(n, static_cast<std::size_t>(w), static_cast<std::size_t>(r), drop_last));
        }
      }
    }
  }
}

TEST_CASE("Padding repeats the list from the start, more than once when W > 2N", "[parallel][sampler]") {
  // N=2, W=7: total 7, padding 5 > N: [0, 1] * 3 cut to 5 -> order 0 1 0 1 0 1 0.
  DistributedSampler sampler(2, 7, 0, kInOrder);
  CHECK(sampler.epoch_order() == Indices{0, 1, 0, 1, 0, 1, 0});
  CHECK(DistributedSampler(2, 7, 6, kInOrder).indices() == Indices{0});
}

TEST_CASE("The shuffle is a permutation seeded by seed + epoch, identical on every rank", "[parallel][sampler]") {
  const SamplerOptions shuffled{true, 0, false};
  DistributedSampler a(10, 3, 0, shuffled), b(10, 3, 2, shuffled);
  // chorus's own generator (splitmix64 + Fisher-Yates), pinned so it cannot drift between versions.
  CHECK(a.epoch_order() == Indices{6, 3, 2, 9, 8, 1, 4, 7, 0, 5, 6, 3});
  CHECK(a.epoch_order() == b.epoch_order());
  Indices sorted = a.epoch_order();
  sorted.resize(10);
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == Indices{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Indices epoch0 = a.epoch_order();
  CHECK(a.epoch_order() == epoch0);  // without set_epoch, every epoch repeats the order
  a.set_epoch(1);
  CHECK(a.epoch_order() != epoch0);
  // seed + epoch is what matters: seed 1 at epoch 0 is seed 0 at epoch 1.
  CHECK(DistributedSampler(10, 3, 0, {true, 1, false}).epoch_order() == a.epoch_order());
}

TEST_CASE("DistributedSampler rejects no replicas and ranks outside them", "[parallel][sampler]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(DistributedSampler(10, 0, 0), Contains("0 replicas"));
  CHECK_THROWS_WITH(DistributedSampler(10, 3, 3), Contains("rank 3 of 3 replicas"));
  CHECK_THROWS_AS(DistributedSampler(10, 3, -1), chorus::Error);
}

TEST_CASE("Every rank's slice interleaves into one epoch order, on host threads and the mailbox fake",
          "[parallel][sampler]") {
  support::run_on_every_communicator("sampler", [](auto& comm) { return dp_checks::check_sampler(comm); },
                                     {{1, 2, 3, 4}, {3}});
}

}  // namespace test_sampler
