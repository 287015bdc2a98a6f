// BucketPlan: which gradients travel together in one all-reduce, and in what order the buckets go
// (docs/data-parallel.md). Pure arithmetic, the same on every rank given the same tensors.
//
// As PyTorch DDP: gradients become ready roughly in reverse registration order (backward runs the
// forward backwards), so tensors are packed in that order; the first bucket of each element type
// is small (1 MiB) so communication starts early, the rest are capped at 25 MiB; a bucket holds one
// element type. Two packing rules:
// - never_exceed_cap (chorus's default): a bucket closes before a tensor would overflow it, so no
//   bucket exceeds its cap; a tensor of at least the cap travels alone and leaves the open bucket
//   open, so the small tensors around big ones (biases, norms between weight matrices) share one
//   bucket instead of travelling in tiny buckets of their own. Buckets launch in the order they are
//   expected to complete (their last tensor's readiness).
// - close_after_crossing (PyTorch's compute_bucket_assignment_by_size in reducer.cpp): a tensor is
//   added first and the bucket closes once it reaches the cap, so a bucket may exceed its cap by one
//   tensor. Buckets are ordered by their first tensor, as PyTorch sorts them by their smallest index.
// The plan is fixed (no rebuild from the order observed in iteration 1); the caller may give the
// expected ready order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <vector>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

enum class BucketRule { never_exceed_cap, close_after_crossing };

struct BucketOptions {
  static constexpr std::size_t kMiB = std::size_t{1} << 20;
  BucketRule rule = BucketRule::never_exceed_cap;
  std::size_t first_bucket_bytes = 1 * kMiB;  // PyTorch's kDefaultFirstBucketBytes
  std::size_t bucket_cap_bytes = 25 * kMiB;   // PyTorch's bucket_cap_mb = 25; 0: one bucket per tensor
};

struct TensorSpec {
  DataType type = DataType::float32;
  std::size_t count = 0;
  std::size_t bytes() const { return count * size_of(type); }
};

struct Bucket {
  DataType type = DataType::float32;
  std::vector<std::size_t> tensors;  // registration indices, in packing order
  std::vector<std::size_t> offsets;  // element offset of each tensor in the bucket
  std::size_t count = 0;             // elements
  std::size_t bytes() const { return count * size_of(type); }
};

struct BucketPlan {
  std::vector<Bucket> buckets;           // in launch order
  std::vector<std::size_t> bucket_of;    // per tensor (registration index)
  std::vector<std::size_t> offset_of;    // per tensor: element offset inside its bucket
};

// ready_order: registration indices in the order gradients are expected to be ready; empty means
// reverse registration order. It must be a permutation of 0..tensors.size()-1.
inline BucketPlan plan_buckets(const std::vector<TensorSpec>& tensors, const BucketOptions& options = {},
                               std::vector<std::size_t> ready_order = {}) {
  const std::size_t n = tensors.size();
  if (ready_order.empty()) {
    for (std::size_t i = n; i-- > 0;) ready_order.push_back(i);
  }
  std::vector<std::size_t> position(n, n);
  if (ready_order.size() != n) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::parallel::plan_buckets: ready order has ",
                                                                    ready_order.size(), " entries for ", n, " tensors"));
  }
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t i = ready_order[p];
    if (i >= n || position[i] != n) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::plan_buckets: ready order entry ", p, " (", i,
                                         ") is out of range or repeated"));
    }
    position[i] = p;
  }

  struct Open {
    Bucket bucket;
    int closed = 0;  // buckets of this type already closed: the first gets first_bucket_bytes
  };
  std::map<DataType, Open> open;
  std::vector<Bucket> closed;
  auto cap = [&](const Open& o) { return o.closed == 0 ? options.first_bucket_bytes : options.bucket_cap_bytes; };
  auto close = [&](Open& o) {
    closed.push_back(std::move(o.bucket));
    o.bucket = Bucket{};
    ++o.closed;
  };
  auto add = [](Bucket& bucket, std::size_t i, const TensorSpec& t) {
    bucket.type = t.type;
    bucket.tensors.push_back(i);
    bucket.offsets.push_back(bucket.count);
    bucket.count += t.count;
  };
  const bool pytorch = options.rule == BucketRule::close_after_crossing;
  for (std::size_t i : ready_order) {
    const TensorSpec& t = tensors[i];
    Open& o = open[t.type];
    if (!pytorch && t.bytes() >= options.bucket_cap_bytes) {
      Bucket alone;  // could share with nothing: the open bucket stays open for the small tensors after it
      add(alone, i, t);
      closed.push_back(std::move(alone));
      continue;
    }
    if (!pytorch && !o.bucket.tensors.empty() && o.bucket.bytes() + t.bytes() > cap(o)) close(o);
    add(o.bucket, i, t);
    if (o.bucket.bytes() >= cap(o)) close(o);  // full (or, crossing, past full)
  }
  for (auto& entry : open) {
    if (!entry.second.bucket.tensors.empty()) close(entry.second);
  }
  // Launch order. never_exceed_cap: by when each bucket can go (its last tensor's readiness), so a bucket
  // of small tensors held open across big ones does not hold them back. close_after_crossing: by the first
  // tensor, as PyTorch orders them.
  auto key = [&](const Bucket& b) { return position[pytorch ? b.tensors.front() : b.tensors.back()]; };
  std::stable_sort(closed.begin(), closed.end(), [&](const Bucket& a, const Bucket& b) { return key(a) < key(b); });

  BucketPlan plan;
  plan.buckets = std::move(closed);
  plan.bucket_of.assign(n, 0);
  plan.offset_of.assign(n, 0);
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    for (std::size_t k = 0; k < plan.buckets[b].tensors.size(); ++k) {
      plan.bucket_of[plan.buckets[b].tensors[k]] = b;
      plan.offset_of[plan.buckets[b].tensors[k]] = plan.buckets[b].offsets[k];
    }
  }
  return plan;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
