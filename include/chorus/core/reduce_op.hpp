// ReduceOp and the element-wise combine every backend uses, so all of them produce the same bits.
// half and bfloat16 combine in float and round once per combine, as NCCL's device code does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "bit_cast.hpp"
#include "config.hpp"
#include "data_type.hpp"

CHORUS_NAMESPACE_BEGIN

enum class ReduceOp : int { sum = 0, prod = 1, max = 2, min = 3, avg = 4 };  // NCCL's numbering

inline const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "unknown";
}

namespace detail {

template <class T> struct compute_type { using type = T; };
template <> struct compute_type<half> { using type = float; };
template <> struct compute_type<bfloat16> { using type = float; };
// Small integers promote in C++ arithmetic anyway; naming the type keeps divide_by's divisor conversion exact.
template <> struct compute_type<std::int8_t> { using type = int; };
template <> struct compute_type<std::uint8_t> { using type = unsigned; };

template <class T>
CHORUS_HOST_DEVICE inline typename compute_type<T>::type widen(T value) {
  return static_cast<typename compute_type<T>::type>(value);
}
template <class T, class C>
CHORUS_HOST_DEVICE inline T narrow(C value) {
  return static_cast<T>(value);
}

template <class F> struct float_bits;
template <> struct float_bits<float> { using type = std::uint32_t; static constexpr type kNan = 0x7fffffffu; };
template <> struct float_bits<double> {
  using type = std::uint64_t;
  static constexpr type kNan = 0x7fffffffffffffffu;
};

// A NaN that sum, prod or avg's divide computes becomes the canonical quiet NaN (all ones but the sign, what
// NVIDIA GPUs' arithmetic returns; 0x7fff once narrowed to half or bfloat16), whatever the operands' signs
// and payloads. x86 would keep one operand's payload, and which one depends on the operand order the
// compiler emits, which differs between a loop's vector and scalar paths (the twin's one-shot fold, whose
// path depends on each rank's buffer alignment, gave ranks different half NaNs): canonical, a NaN has the
// same bits on every rank, path and backend. A compare and a select per element, in a memory-bound loop.
template <class C>
CHORUS_HOST_DEVICE inline C canonical_nan(C value) {
#if defined(__CUDA_ARCH__)
  // NVIDIA float and double arithmetic already returns these canonical NaNs (PTX ISA: add/mul/div.f32 and
  // .f64 produce the canonical NaN), and the select cost the collective kernels about 1 KiB of stack per
  // thread at sm_90 (ptxas -v: 1584 -> 2720 bytes for float): on the device the hardware does it.
  return value;
#else
  if constexpr (std::is_floating_point<C>::value) {
    using U = typename float_bits<C>::type;
    const U nan = float_bits<C>::kNan;  // a copy: device code may not bind a reference to the member
    return value != value ? bit_cast<C>(nan) : value;
  } else {
    return value;
  }
#endif
}

// Integer sum and prod wrap, as NCCL's do. Signed overflow is undefined in C++, so they run in the unsigned
// type of the same width (modular) and convert back, which keeps the low bits: defined since C++20 and what
// every C++17 compiler does. Types narrower than int use unsigned int, or promotion would make them signed.
template <class T>
using wrap_t = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

template <class T>
CHORUS_HOST_DEVICE inline T add(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using W = wrap_t<T>;
    return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
  } else {
    return narrow<T>(canonical_nan(widen(a) + widen(b)));
  }
}

template <class T>
CHORUS_HOST_DEVICE inline T multiply(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using W = wrap_t<T>;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  } else {
    return narrow<T>(canonical_nan(widen(a) * widen(b)));
  }
}

// Floating min and max treat NaN as missing data, as NCCL's device code does (fminf/fmaxf, __hmin/__hmax):
// a NaN loses to any number, and two NaNs give one canonical quiet NaN (all ones but the sign, CUDA's; it
// narrows to 0x7fff in half and bfloat16) whatever their payloads. Zeros order -0 < +0. That is IEEE
// 754-2019 minimumNumber / maximumNumber: commutative and associative, so the result's bits do not depend
// on the order or grouping of the combines.
// The form suits combine_range's vectorised loop (no branches, a dozen or so SSE2 instructions per vector):
// the two operand orders of a plain select agree except on NaNs and ties, OR (min) or AND (max) of their
// bits settles a tie of zeros, and selects let a NaN lose.
template <class F>
CHORUS_HOST_DEVICE inline F min_number(F a, F b) {
  using U = typename float_bits<F>::type;
  const U nan = float_bits<F>::kNan;  // a copy: device code may not bind a reference to the member
  U r = bit_cast<U>(b < a ? b : a) | bit_cast<U>(a < b ? a : b);
  const bool a_nan = a != a, b_nan = b != b;
  r = a_nan ? bit_cast<U>(b) : r;
  r = b_nan ? bit_cast<U>(a) : r;
  return bit_cast<F>((a_nan & b_nan) ? nan : r);
}

template <class F>
CHORUS_HOST_DEVICE inline F max_number(F a, F b) {
  using U = typename float_bits<F>::type;
  const U nan = float_bits<F>::kNan;
  U r = bit_cast<U>(b > a ? b : a) & bit_cast<U>(a > b ? a : b);
  const bool a_nan = a != a, b_nan = b != b;
  r = a_nan ? bit_cast<U>(b) : r;
  r = b_nan ? bit_cast<U>(a) : r;
  return bit_cast<F>((a_nan & b_nan) ? nan : r);
}

// Integers are totally ordered and equal values have equal bits, so a plain select is order-independent.
// half and bfloat16 compare in float: widening is exact and narrowing returns the operand's own bits.
template <class T>
CHORUS_HOST_DEVICE inline T minimum(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    return b < a ? b : a;
  } else {
    return narrow<T>(min_number(widen(a), widen(b)));
  }
}

template <class T>
CHORUS_HOST_DEVICE inline T maximum(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    return b > a ? b : a;
  } else {
    return narrow<T>(max_number(widen(a), widen(b)));
  }
}

}  // namespace detail

// acc op x, with acc always the left operand: the order is part of the determinism contract.
// avg combines as sum; the division by the rank count is a separate finishing pass (finish_avg).
template <class T>
CHORUS_HOST_DEVICE inline T combine(ReduceOp op, T acc, T x) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return detail::add(acc, x);
    case ReduceOp::prod: return detail::multiply(acc, x);
    case ReduceOp::max: return detail::maximum(acc, x);
    case ReduceOp::min: return detail::minimum(acc, x);
  }
  return acc;
}

template <class T, ReduceOp Op>
struct Combiner {
  CHORUS_HOST_DEVICE T operator()(T acc, T x) const { return combine(Op, acc, x); }
};

// dst[i] = a[i] op b[i]; one switch per call, a tight loop per op so the compiler vectorises it.
template <class T>
inline void combine_range(ReduceOp op, const T* a, const T* b, T* dst, std::size_t count) {
  auto loop = [&](auto combiner) {
    for (std::size_t i = 0; i < count; ++i) dst[i] = combiner(a[i], b[i]);
  };
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: loop(Combiner<T, ReduceOp::sum>{}); break;
    case ReduceOp::prod: loop(Combiner<T, ReduceOp::prod>{}); break;
    case ReduceOp::max: loop(Combiner<T, ReduceOp::max>{}); break;
    case ReduceOp::min: loop(Combiner<T, ReduceOp::min>{}); break;
  }
}

// avg's finishing divide. Integers truncate toward zero (NCCL's SumPostDiv); floats divide in
// the compute type and round once. ranks >= 1, so the integer divide cannot overflow (only
// INT_MIN / -1 could) and runs in the signed type, where truncation toward zero is what we want.
template <class T>
CHORUS_HOST_DEVICE inline T divide_by(T value, int ranks) {
  using C = typename detail::compute_type<T>::type;
  return detail::narrow<T>(detail::canonical_nan(detail::widen(value) / static_cast<C>(ranks)));
}

template <class T>
inline void finish_avg(T* data, std::size_t count, int ranks) {
  for (std::size_t i = 0; i < count; ++i) data[i] = divide_by(data[i], ranks);
}

CHORUS_NAMESPACE_END  // namespace chorus
