// ReduceOp and the element-wise combine every backend uses, so all of them produce the same bits.
// half and bfloat16 combine in float and round once per combine, as NCCL's device code does.
#pragma once

#include <cstddef>

#include "data_type.hpp"

namespace chorus {

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
// Small integers promote in C++ arithmetic; combine in a wide type and wrap back, as NCCL does.
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

}  // namespace detail

// acc op x, with acc always the left operand: the order is part of the determinism contract.
// avg combines as sum; the division by the rank count is a separate finishing pass (finish_avg).
template <class T>
CHORUS_HOST_DEVICE inline T combine(ReduceOp op, T acc, T x) {
  const auto a = detail::widen(acc);
  const auto b = detail::widen(x);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return detail::narrow<T>(a + b);
    case ReduceOp::prod: return detail::narrow<T>(a * b);
    case ReduceOp::max: return detail::narrow<T>(b > a ? b : a);
    case ReduceOp::min: return detail::narrow<T>(b < a ? b : a);
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
// the compute type and round once.
template <class T>
CHORUS_HOST_DEVICE inline T divide_by(T value, int ranks) {
  using C = typename detail::compute_type<T>::type;
  return detail::narrow<T>(detail::widen(value) / static_cast<C>(ranks));
}

template <class T>
inline void finish_avg(T* data, std::size_t count, int ranks) {
  for (std::size_t i = 0; i < count; ++i) data[i] = divide_by(data[i], ranks);
}

}  // namespace chorus
