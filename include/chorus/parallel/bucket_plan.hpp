// BucketPlan: which gradients travel together in one all-reduce, and in what order the buckets go
// (docs/data-parallel.md). Pure arithmetic, the same on every rank given the same tensors.
//
// As PyTorch DDP: gradients become ready roughly in reverse registration order (backward runs the
// forward backwards), so tensors are packed in that order; the first bucket of each element type
// is small (1 MiB) so communication starts early, the rest are capped at 25 MiB; a bucket holds one
// element type. Where chorus differs: a bucket never exceeds its cap (PyTorch closes a bucket only
// after a tensor pushes it past the cap), so a tensor larger than the cap travels alone; and the plan
// is fixed (no rebuild from the order observed in iteration 1), though the caller may give the
// expected ready order. Buckets are numbered by when their first tensor is expected to be ready.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <vector>

#include "../core/data_type.hpp"
#include "../core/error.hpp"

namespace chorus::parallel {

struct BucketOptions {
  static constexpr std::size_t kMiB = std::size_t{1} << 20;
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
  for (std::size_t i : ready_order) {
    const TensorSpec& t = tensors[i];
    Open& o = open[t.type];
    if (!o.bucket.tensors.empty() && o.bucket.bytes() + t.bytes() > cap(o)) close(o);
    o.bucket.type = t.type;
    o.bucket.tensors.push_back(i);
    o.bucket.offsets.push_back(o.bucket.count);
    o.bucket.count += t.count;
    if (o.bucket.bytes() >= cap(o)) close(o);  // full, or one tensor over the cap alone
  }
  for (auto& entry : open) {
    if (!entry.second.bucket.tensors.empty()) close(entry.second);
  }
  // Launch order: by when each bucket's first tensor is expected to be ready.
  std::stable_sort(closed.begin(), closed.end(), [&](const Bucket& a, const Bucket& b) {
    return position[a.tensors.front()] < position[b.tensors.front()];
  });

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

}  // namespace chorus::parallel
