// Inputs with NaNs (quiet, with a payload, negative, signalling) and infinities for the NaN promise
// (docs/communicator.md, "Bit-identical results"), and what each reduced element must then be.
// Finite inputs are small integers (sum) or powers of two (prod), so every partial result is exact and
// never overflows: a result's class (NaN, +-Inf, finite) and, when it is not NaN, its bits do not depend on
// the order of the combines, and a reference folded in rank order is the reference for every algorithm.
// Plain C++ (no Catch2): each rank's thread records failures as text, the main thread asserts.
#pragma once

#include <chorus/core/bfloat16.hpp>
#include <chorus/core/half.hpp>
#include <chorus/core/reduce_op.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace nan_inf {

using chorus::ReduceOp;

// The bit patterns used per type. `canonical` is the one NaN chorus computes (docs/communicator.md): all
// ones but the sign, what sum, prod and avg give for a NaN result and min/max when every operand is NaN.
template <class T> struct Patterns;
template <> struct Patterns<float> {
  using U = std::uint32_t;
  static constexpr U quiet = 0x7fc00000u, payload = 0x7fc12345u, negative = 0xffc0beefu, signalling = 0x7f800abcu;
  static constexpr U inf = 0x7f800000u, sign = 0x80000000u, canonical = 0x7fffffffu;
};
template <> struct Patterns<double> {
  using U = std::uint64_t;
  static constexpr U quiet = 0x7ff8000000000000u, payload = 0x7ff800000badf00du, negative = 0xfff8000000c0ffeeu,
                     signalling = 0x7ff0000000000abcu;
  static constexpr U inf = 0x7ff0000000000000u, sign = 0x8000000000000000u, canonical = 0x7fffffffffffffffu;
};
template <> struct Patterns<chorus::half> {
  using U = std::uint16_t;
  static constexpr U quiet = 0x7e00u, payload = 0x7e2bu, negative = 0xfe57u, signalling = 0x7c15u;
  static constexpr U inf = 0x7c00u, sign = 0x8000u, canonical = 0x7fffu;
};
template <> struct Patterns<chorus::bfloat16> {
  using U = std::uint16_t;
  static constexpr U quiet = 0x7fc0u, payload = 0x7fc5u, negative = 0xffd3u, signalling = 0x7f81u;
  static constexpr U inf = 0x7f80u, sign = 0x8000u, canonical = 0x7fffu;
};

template <class T>
using bits_t = typename Patterns<T>::U;

template <class T>
bits_t<T> bits_of(T value) {
  bits_t<T> bits;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
T from_bits(bits_t<T> bits) {
  T value;
  std::memcpy(static_cast<void*>(&value), &bits, sizeof(T));
  return value;
}

// In the widest type that holds T exactly (half and bfloat16 widen to float exactly).
template <class T>
auto wide(T value) {
  if constexpr (std::is_same<T, double>::value) {
    return value;
  } else {
    return static_cast<float>(value);
  }
}

template <class T>
bool is_nan(T value) { return std::isnan(wide(value)); }

template <class T>
T from_float(float value) { return static_cast<T>(value); }  // exact for every value used here

enum class Kind { quiet_nan, payload_nan, negative_nan, signalling_nan, plus_inf, minus_inf, plus_zero, minus_zero, finite };

inline bool is_nan_kind(Kind kind) { return kind <= Kind::signalling_nan; }

template <class T>
T make(Kind kind, float finite) {
  using P = Patterns<T>;
  switch (kind) {
    case Kind::quiet_nan: return from_bits<T>(P::quiet);
    case Kind::payload_nan: return from_bits<T>(P::payload);
    case Kind::negative_nan: return from_bits<T>(P::negative);
    case Kind::signalling_nan: return from_bits<T>(P::signalling);
    case Kind::plus_inf: return from_bits<T>(P::inf);
    case Kind::minus_inf: return from_bits<T>(static_cast<bits_t<T>>(P::inf | P::sign));
    case Kind::plus_zero: return from_bits<T>(0);
    case Kind::minus_zero: return from_bits<T>(P::sign);
    case Kind::finite: return from_float<T>(finite);
  }
  return T{};
}

inline std::uint32_t mix(std::uint32_t x) {  // a small integer hash: the same inputs on every rank and run
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

inline Kind nan_kind(int which) { return static_cast<Kind>(which % 4); }

// Element i of rank `rank` of `ranks`. The first elements are chosen cases (NaN everywhere with four
// different payloads, one NaN at the first or last rank, +Inf meeting -Inf, 0 meeting Inf, signed zeros);
// the rest are drawn: about 1 in 16 a NaN, 3 in 16 an infinity, 1 in 16 a zero, the rest finite.
inline Kind kind_at(int ranks, int rank, std::size_t i) {
  const int last = ranks - 1;
  switch (i) {
    case 0: return nan_kind(rank);                                                   // every rank NaN
    case 1: return rank == 0 ? Kind::payload_nan : Kind::finite;                     // NaN first
    case 2: return rank == last ? Kind::negative_nan : Kind::finite;                 // NaN last
    case 3: return rank == 0 ? Kind::plus_inf : rank == last ? Kind::minus_inf : Kind::finite;  // inf - inf
    case 4: return Kind::plus_inf;
    case 5: return rank == 1 ? Kind::minus_inf : Kind::finite;
    case 6: return rank == 0 ? Kind::plus_zero : Kind::minus_zero;
    case 7: return Kind::minus_zero;
    case 8: return rank == 0 ? Kind::plus_zero : rank == last ? Kind::plus_inf : Kind::finite;  // 0 * inf
    case 9: return rank == 0 ? Kind::quiet_nan : rank == ranks / 2 ? Kind::signalling_nan : Kind::finite;
    case 10: return rank == 0 ? Kind::minus_inf : rank == last ? Kind::payload_nan : Kind::finite;
    case 11: return rank == last ? Kind::negative_nan : Kind::payload_nan;          // NaN against NaN
    default: break;
  }
  const std::uint32_t h = mix(static_cast<std::uint32_t>(i) * 131u + static_cast<std::uint32_t>(rank)) % 64u;
  if (h < 4) return nan_kind(static_cast<int>(h));
  if (h < 10) return Kind::plus_inf;
  if (h < 16) return Kind::minus_inf;
  if (h < 18) return Kind::plus_zero;
  if (h < 20) return Kind::minus_zero;
  return Kind::finite;
}

// Finite values: sums of up to 16 of -2..2 and products of up to 16 of +-1, +-2, +-1/2 are exact in every
// type here (bfloat16 too: a product of powers of two is a power of two, at most 2^16).
inline float finite_at(ReduceOp op, int rank, std::size_t i) {
  const std::uint32_t h = mix(static_cast<std::uint32_t>(i) * 7919u + static_cast<std::uint32_t>(rank) * 31u + 17u);
  static const float powers[] = {1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f};
  static const float extremes[] = {-3.0f, -2.0f, -1.0f, -0.5f, 0.5f, 1.0f, 2.0f, 3.0f};
  switch (op) {
    case ReduceOp::prod: return powers[h % 6];
    case ReduceOp::max:
    case ReduceOp::min: return extremes[h % 8];
    default: return static_cast<float>(static_cast<int>(h % 5) - 2);
  }
}

template <class T>
T input_at(ReduceOp op, int ranks, int rank, std::size_t i) {
  return make<T>(kind_at(ranks, rank, i), finite_at(op, rank, i));
}

template <class T>
std::vector<T> inputs(ReduceOp op, int ranks, int rank, std::size_t count, std::size_t offset = 0) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = input_at<T>(op, ranks, rank, offset + i);
  return values;
}

// The reference: ranks folded in order 0..n-1 with chorus::combine (acc on the left), then avg's divide.
template <class T>
T reference_at(ReduceOp op, int ranks, std::size_t i) {
  T acc = input_at<T>(op, ranks, 0, i);
  for (int r = 1; r < ranks; ++r) acc = chorus::combine(op, acc, input_at<T>(op, ranks, r, i));
  return op == ReduceOp::avg ? chorus::divide_by(acc, ranks) : acc;
}

// Whether element i must be NaN, from the inputs alone (IEEE: NaN in, NaN out; Inf - Inf and 0 * Inf are
// NaN; finite inputs here never overflow). Checks the reference as well as the backends.
inline bool nan_expected(ReduceOp op, int ranks, std::size_t i) {
  bool nan = false, plus_inf = false, minus_inf = false, zero = false;
  for (int r = 0; r < ranks; ++r) {
    const Kind kind = kind_at(ranks, r, i);
    nan |= is_nan_kind(kind);
    plus_inf |= kind == Kind::plus_inf;
    minus_inf |= kind == Kind::minus_inf;
    zero |= kind == Kind::plus_zero || kind == Kind::minus_zero;
  }
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return nan || (plus_inf && minus_inf);
    case ReduceOp::prod: return nan || (zero && (plus_inf || minus_inf));
    case ReduceOp::max:
    case ReduceOp::min: {
      bool all_nan = true;
      for (int r = 0; r < ranks; ++r) all_nan &= is_nan_kind(kind_at(ranks, r, i));
      return all_nan;
    }
  }
  return false;
}

// min and max by the documented rule (docs/errors.md), written independently of chorus::combine: NaN is
// missing data, -0 < +0, and when every input is NaN the result is the canonical NaN.
template <class T>
bits_t<T> extreme_by_rule(ReduceOp op, int ranks, std::size_t i) {
  bool found = false;
  T best{};
  for (int r = 0; r < ranks; ++r) {
    const T x = input_at<T>(op, ranks, r, i);
    if (is_nan(x)) continue;
    const auto wx = wide(x), wb = wide(best);
    // Order by value, and -0 below +0 (signbit breaks the tie of equal zeros).
    const bool x_wins = !found || (op == ReduceOp::max ? (wx > wb || (wx == wb && !std::signbit(wx) && std::signbit(wb)))
                                                       : (wx < wb || (wx == wb && std::signbit(wx) && !std::signbit(wb))));
    if (x_wins) best = x;
    found = true;
  }
  return found ? bits_of(best) : Patterns<T>::canonical;
}

template <class T>
std::string hex(T value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*llx", static_cast<int>(2 * sizeof(T)),
                static_cast<unsigned long long>(bits_of(value)));
  return text;
}

// Checks `got` (elements offset..offset+size of a reduction over ranks >= 2) against the promise; appends
// one line per wrong element (at most a few) to `failures`, prefixed with `what`.
//   sum, prod, avg: the canonical NaN exactly where IEEE makes the result NaN (the reference agrees),
//                   elsewhere the reference's bits;
//   min, max:       the rule's bits, NaN included.
template <class T>
void check_reduced(const std::string& what, ReduceOp op, int ranks, const T* got, std::size_t size, std::size_t offset,
                   std::vector<std::string>& failures) {
  int reported = 0;
  const auto fail = [&](std::size_t i, const std::string& why) {
    if (reported++ < 4) failures.push_back(what + ": element " + std::to_string(i) + ": " + why);
  };
  for (std::size_t k = 0; k < size; ++k) {
    const std::size_t i = offset + k;
    const T value = got[k];
    if (op == ReduceOp::max || op == ReduceOp::min) {
      const bits_t<T> want = extreme_by_rule<T>(op, ranks, i);
      if (bits_of(value) != want) fail(i, "got " + hex(value) + ", the rule gives " + hex(from_bits<T>(want)));
      continue;
    }
    const T reference = reference_at<T>(op, ranks, i);
    const bool want_nan = nan_expected(op, ranks, i);
    if (is_nan(reference) != want_nan) fail(i, "the reference " + hex(reference) + " disagrees with IEEE on NaN");
    if (want_nan) {
      if (bits_of(value) != Patterns<T>::canonical) fail(i, "got " + hex(value) + ", want the canonical NaN");
    } else if (bits_of(value) != bits_of(reference)) {
      fail(i, "got " + hex(value) + ", want " + hex(reference));
    }
  }
  if (reported > 4) failures.push_back(what + ": " + std::to_string(reported - 4) + " more wrong elements");
}

// Every rank's result holds the same bits as rank 0's, NaN payloads included.
template <class T>
void check_same_bits(const std::string& what, const std::vector<const T*>& per_rank, std::size_t size,
                     std::vector<std::string>& failures) {
  for (std::size_t r = 1; r < per_rank.size(); ++r) {
    for (std::size_t i = 0; i < size; ++i) {
      if (bits_of(per_rank[r][i]) != bits_of(per_rank[0][i])) {
        failures.push_back(what + ": rank " + std::to_string(r) + " element " + std::to_string(i) + " holds " +
                           hex(per_rank[r][i]) + ", rank 0 " + hex(per_rank[0][i]));
        break;
      }
    }
  }
}

}  // namespace nan_inf
