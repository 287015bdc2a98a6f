// The exact correctness check behind the #wrong column. Every rank's input is a small integer
// pattern chosen so that the reduced result is exact in every type, whatever order an algorithm
// combines the ranks in; the expected result is then a single value to compare bit for bit.
//
//   sum, avg   (rank + j) % 4: every partial sum is an integer no larger than 3n, exact while 3n
//              stays within the type's exact-integer range (bfloat16: 256, so only the first 85
//              ranks contribute non-zero values; half: 2048). Integer types wrap, and wrapping
//              addition is still order-independent.
//   prod       2 on exactly one rank (j % (n+1)), 1 elsewhere: products are 1 or 2.
//   min, max   (5 rank + 3 j) % 11, shifted to -5..5 for signed and floating types.
//   data only  (13 rank + 7 j) % 101 for broadcast, all_gather, all_to_all: fits int8.
// avg divides the exact sum once (chorus::divide_by), as every executor does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/reduce_op.hpp"
#include "bandwidth.hpp"
#include "names.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

template <class T>
T from_integer(long long value) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// Largest M with every integer in [0, M] exact in T. Integer types have no such bound: their
// arithmetic wraps, which is exact modular arithmetic in any order.
template <class T>
constexpr std::uint64_t exact_integer_limit() {
  if constexpr (std::is_same_v<T, half>) return std::uint64_t{1} << 11;
  else if constexpr (std::is_same_v<T, bfloat16>) return std::uint64_t{1} << 8;
  else if constexpr (std::is_same_v<T, float>) return std::uint64_t{1} << 24;
  else if constexpr (std::is_same_v<T, double>) return std::uint64_t{1} << 53;
  else return std::numeric_limits<std::uint64_t>::max();
}

template <class T>
class Check {
 public:
  // count is the count passed to the collective call (see bandwidth.hpp's Shape::count).
  Check(Collective collective, ReduceOp op, int ranks, int root, std::size_t count)
      : collective_(collective), op_(op), ranks_(ranks), root_(root), count_(count) {
    const std::uint64_t limit = exact_integer_limit<T>() / 3;
    sum_ranks_ = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(ranks), limit));
    if (!traits(collective_).reduces) return;
    period_ = op_ == ReduceOp::prod ? static_cast<std::size_t>(ranks_) + 1
              : op_ == ReduceOp::sum || op_ == ReduceOp::avg ? 4
                                                             : 11;
    reduced_.resize(period_);
    for (std::size_t j = 0; j < period_; ++j) {
      T acc = input(0, j);
      for (int r = 1; r < ranks_; ++r) acc = combine(op_, acc, input(r, j));
      reduced_[j] = op_ == ReduceOp::avg ? divide_by(acc, ranks_) : acc;
    }
  }

  std::size_t input_count() const { return send_count(collective_, count_, ranks_); }
  std::size_t output_count() const { return recv_count(collective_, count_, ranks_); }

  // The value `rank` holds at `index` of its send buffer.
  T input(int rank, std::size_t index) const {
    // Reduce the index first: each pattern depends on it only modulo its period.
    const auto r = static_cast<long long>(rank);
    const auto mod = [index](std::size_t m) { return static_cast<long long>(index % m); };
    if (!traits(collective_).reduces) return from_integer<T>((13 * r + 7 * mod(101)) % 101);
    switch (op_) {
      case ReduceOp::sum:
      case ReduceOp::avg: return from_integer<T>(rank < sum_ranks_ ? (r + mod(4)) % 4 : 0);
      case ReduceOp::prod: return from_integer<T>(mod(static_cast<std::size_t>(ranks_) + 1) == r ? 2 : 1);
      case ReduceOp::min:
      case ReduceOp::max: return from_integer<T>((5 * r + 3 * mod(11)) % 11 - (kSigned ? 5 : 0));
    }
    return T{};
  }

  // The value `rank` must hold at `index` of its receive buffer afterwards.
  T expected(int rank, std::size_t index) const {
    const auto r = static_cast<std::size_t>(rank);
    switch (collective_) {
      case Collective::all_reduce:
      case Collective::reduce: return reduced_[index % period_];
      case Collective::reduce_scatter: return reduced_[(r * count_ + index) % period_];
      case Collective::broadcast: return input(root_, index);
      case Collective::all_gather: return input(static_cast<int>(index / count_), index % count_);
      case Collective::all_to_all:
        return input(static_cast<int>(index / count_), r * count_ + index % count_);
    }
    return T{};
  }

  // reduce leaves non-root receive buffers untouched, so there is nothing to check there.
  bool checks(int rank) const { return !traits(collective_).recv_on_root_only || rank == root_; }

  // Writes input_count() elements; for in-place calls pass the in-place send pointer.
  void fill_input(int rank, T* input_buffer) const {
    const std::size_t n = input_count();
    for (std::size_t i = 0; i < n; ++i) input_buffer[i] = input(rank, i);
  }

  // Compares output_count() elements bit for bit (so -0 != +0 and a NaN is always wrong).
  std::size_t count_wrong(int rank, const T* output) const {
    if (!checks(rank)) return 0;
    const std::size_t n = output_count();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const T want = expected(rank, i);
      if (std::memcmp(&want, &output[i], sizeof(T)) != 0) ++wrong;
    }
    return wrong;
  }

 private:
  static constexpr bool kSigned = !std::is_integral_v<T> || std::is_signed_v<T>;

  Collective collective_;
  ReduceOp op_;
  int ranks_;
  int root_;
  std::size_t count_;
  int sum_ranks_ = 0;
  std::size_t period_ = 1;
  std::vector<T> reduced_;  // the expected reduction at global index j is reduced_[j % period_]
};

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
