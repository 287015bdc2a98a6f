// DistributedSampler: which dataset indices each data-parallel rank reads in an epoch, with
// PyTorch's semantics (torch/utils/data/distributed.py; docs/data-parallel.md):
//   num_samples = ceil(N / W), or floor(N / W) with drop_last;  total = num_samples * W
//   the epoch's order is 0..N-1, or a permutation seeded by seed + epoch when shuffling;
//   it is padded to total by repeating it from the start (or truncated with drop_last);
//   rank r takes the strided slice order[r], order[r + W], ..., order[r + (num_samples-1) W].
// The permutation is chorus's own deterministic generator (splitmix64 + Fisher-Yates), the same on
// every platform and rank, but not torch.randperm's: shuffled index lists match PyTorch's only in
// their properties, unshuffled ones exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct SamplerOptions {
  bool shuffle = true;     // PyTorch's defaults
  std::uint64_t seed = 0;  // must be the same on every rank
  bool drop_last = false;
};

namespace detail {

// splitmix64 (Steele, Lea, Flood 2014): tiny, well mixed, fully specified.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) by rejection, so no value is favoured (std:: distributions differ by library).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace detail

class DistributedSampler {
 public:
  DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, SamplerOptions options = {})
      : size_(dataset_size), replicas_(num_replicas), rank_(rank), options_(options) {
    if (num_replicas < 1) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::DistributedSampler: ", num_replicas, " replicas"));
    }
    if (rank < 0 || rank >= num_replicas) {
      throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::parallel::DistributedSampler: rank ",
                                                                      rank, " of ", num_replicas, " replicas"));
    }
    const auto w = static_cast<std::size_t>(replicas_);
    num_samples_ = options_.drop_last ? size_ / w : (size_ + w - 1) / w;  // drop: ceil((N-W)/W) == floor(N/W)
  }

  // Reshuffles: call at the start of every epoch, or every epoch repeats the same order.
  void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
  std::uint64_t epoch() const { return epoch_; }

  std::size_t num_samples() const { return num_samples_; }  // per rank
  std::size_t total_size() const { return num_samples_ * static_cast<std::size_t>(replicas_); }

  // The whole epoch's order, padded or truncated to total_size(); the same on every rank.
  std::vector<std::size_t> epoch_order() const {
    std::vector<std::size_t> order(size_);
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (options_.shuffle) {
      detail::SplitMix64 random(options_.seed + epoch_);
      for (std::size_t i = size_; i > 1; --i) std::swap(order[i - 1], order[random.below(i)]);
    }
    const std::size_t total = total_size();
    if (total <= size_) {
      order.resize(total);
    } else {
      for (std::size_t i = size_; i < total; ++i) order.push_back(order[i % size_]);
    }
    return order;
  }

  // This rank's indices for the current epoch.
  std::vector<std::size_t> indices() const {
    const std::vector<std::size_t> order = epoch_order();
    std::vector<std::size_t> mine;
    for (std::size_t i = static_cast<std::size_t>(rank_); i < order.size(); i += static_cast<std::size_t>(replicas_)) {
      mine.push_back(order[i]);
    }
    return mine;
  }

 private:
  std::size_t size_;
  int replicas_;
  int rank_;
  SamplerOptions options_;
  std::size_t num_samples_ = 0;
  std::uint64_t epoch_ = 0;
};

// A sampler for this rank of `comm`'s data-parallel group.
template <class Comm, class = std::enable_if_t<is_communicator_v<Comm>>>
DistributedSampler make_distributed_sampler(const Comm& comm, std::size_t dataset_size, SamplerOptions options = {}) {
  return DistributedSampler(dataset_size, comm.size(), comm.rank(), options);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
