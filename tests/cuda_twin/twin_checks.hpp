// Shared by the CPU-twin tests: run one all_reduce on the twin and the same one on the host backend
// (with the schedule the kernel implements) and hand back both results.
#pragma once

#include <chorus/cuda/twin/twin_team.hpp>

#include "../host/harness.hpp"

#include <algorithm>
#include <random>
#include <vector>

namespace twin_checks {

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::cuda::kernel::KernelAlgorithm;

// The host schedule each kernel computes: LL is a one-shot with another transport.
inline Algorithm schedule_of(KernelAlgorithm algorithm) {
  switch (algorithm) {
    case KernelAlgorithm::one_shot:
    case KernelAlgorithm::ll_one_shot: return Algorithm::one_shot;
    case KernelAlgorithm::two_shot: return Algorithm::two_shot;
    case KernelAlgorithm::ring: return Algorithm::ring;
    case KernelAlgorithm::tree: return Algorithm::tree;
    case KernelAlgorithm::pairwise: return Algorithm::pairwise;  // all_to_all only
  }
  return Algorithm::automatic;
}

inline constexpr KernelAlgorithm kKernelAlgorithms[] = {KernelAlgorithm::one_shot, KernelAlgorithm::two_shot,
                                                        KernelAlgorithm::ll_one_shot, KernelAlgorithm::ring,
                                                        KernelAlgorithm::tree};

// Values whose sum depends on the order it is taken in (mixed signs and magnitudes), so a kernel that
// folds in another order than its schedule gives other bits.
template <class T>
std::vector<T> order_sensitive(int rank, std::size_t count, std::uint32_t seed) {
  std::mt19937 random(seed * 977u + static_cast<std::uint32_t>(rank));
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<T> values(count);
  for (T& v : values) v = T(std::ldexp(mantissa(random), exponent(random)));
  return values;
}

// Chain reduce: from the root's next rank along the ring, each folding its input in after the partial, the
// root last.
template <class T>
std::vector<T> chain_reference(const std::vector<std::vector<T>>& in, ReduceOp op, int root, const std::vector<int>& order) {
  const int n = static_cast<int>(in.size());
  if (n == 1) return in[0];
  const int start = static_cast<int>(std::find(order.begin(), order.end(), root) - order.begin());
  const auto at = [&](int distance) { return in[static_cast<std::size_t>(order[static_cast<std::size_t>((start + distance) % n)])]; };
  std::vector<T> out = at(1);
  for (int d = 2; d <= n; ++d) {
    const std::vector<T>& next = at(d);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = chorus::combine(op, out[i], next[i]);
  }
  if (op == ReduceOp::avg) {
    for (T& v : out) v = chorus::divide_by(v, n);
  }
  return out;
}

struct Outputs {
  std::vector<std::vector<unsigned char>> twin;
  std::vector<std::vector<unsigned char>> host;
};

template <class T>
std::vector<unsigned char> bytes_of(const std::vector<T>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// The first byte at which two results differ (or a size difference: the shorter length); -1 if equal.
// Catch2 would print whole byte vectors; a position says more.
inline long first_difference(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  const std::size_t common = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < common; ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<long>(common);
}

// `offset` elements of padding before each buffer: misaligned starts. In place: output == input.
template <class T>
Outputs run_both(chorus::cuda::twin::Team& team, const std::vector<int>& ring_order,
                 const std::vector<std::vector<T>>& inputs, ReduceOp op, KernelAlgorithm algorithm, bool in_place,
                 std::size_t offset = 0) {
  const int n = team.size();
  const std::size_t count = inputs[0].size();
  std::vector<std::vector<T>> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  std::vector<const T*> in_ptr;
  std::vector<T*> out_ptr;
  for (int r = 0; r < n; ++r) {
    auto& i = in[static_cast<std::size_t>(r)];
    auto& o = out[static_cast<std::size_t>(r)];
    i.assign(offset, T{});
    i.insert(i.end(), inputs[static_cast<std::size_t>(r)].begin(), inputs[static_cast<std::size_t>(r)].end());
    o.assign(offset + count, harness::sentinel<T>());
    in_ptr.push_back(i.data() + offset);
    out_ptr.push_back(in_place ? i.data() + offset : o.data() + offset);
  }
  team.all_reduce_with<T>(in_ptr, out_ptr, count, op, algorithm);
  team.synchronize();  // the twin is asynchronous, as a GPU: results may be read after the wait
  Outputs result;
  for (int r = 0; r < n; ++r) {
    const T* got = out_ptr[static_cast<std::size_t>(r)];
    result.twin.push_back(bytes_of(std::vector<T>(got, got + count)));
  }

  chorus::host::Team host(n);
  host.set_ring_order(ring_order);
  std::vector<std::vector<T>> host_out(static_cast<std::size_t>(n), std::vector<T>(count));
  harness::run(host, [&](chorus::host::Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    comm.all_reduce(inputs[r].data(), host_out[r].data(), count, op, schedule_of(algorithm));
  });
  for (const auto& values : host_out) result.host.push_back(bytes_of(values));
  return result;
}

// Runs `fn` with the kernels' bound (CHORUS_KERNEL_TIMEOUT_MS) at `ms`, restoring it after (a timeout case
// that ends in a fraction of a second). A team reads the bound when it is made: make it inside `fn`.
template <class Fn>
void with_timeout_ms(const char* ms, Fn&& fn) {
  const support::ScopedEnv timeout("CHORUS_KERNEL_TIMEOUT_MS", ms);
  fn();
}

}  // namespace twin_checks
