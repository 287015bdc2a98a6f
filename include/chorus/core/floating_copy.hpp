// copy_floating: copy n floating-point elements between buffers of possibly different types
// (float32, float64, float16, bfloat16), dividing by `divisor` on the way. It is how gradients
// enter a gradient bucket (averaged, maybe compressed to 16 bits) and leave it again, on the host
// and, through convert_floating, in the device kernels (cuda/device/*: the CPU twin runs this very
// loop on a stream, the GPU a kernel over the same element function, so both give the same bits).
// The division happens in double, which for float32 rounds exactly as a float division would.
#pragma once

#include <cstddef>
#include <type_traits>

#include "bfloat16.hpp"
#include "config.hpp"
#include "data_type.hpp"
#include "half.hpp"

CHORUS_NAMESPACE_BEGIN
namespace detail {

template <class Fn>
void visit_floating(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::float16: fn(half{}); return;
    case DataType::bfloat16: fn(bfloat16{}); return;
    case DataType::float64: fn(double{}); return;
    default: fn(float{}); return;
  }
}

template <class T>
CHORUS_HOST_DEVICE double to_double(T value) {
  if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

template <class T>
CHORUS_HOST_DEVICE T from_double(double value) {
  if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

}  // namespace detail

// One element: S -> D, divided by `divisor` (1: a plain conversion, no division).
template <class S, class D>
CHORUS_HOST_DEVICE D convert_floating(S value, double divisor) {
  return divisor == 1.0 ? detail::from_double<D>(detail::to_double(value)) : detail::from_double<D>(detail::to_double(value) / divisor);
}

// Calls fn(S{}, D{}) with the element types of two floating DataTypes.
template <class Fn>
void visit_floating_pair(DataType src, DataType dst, Fn&& fn) {
  detail::visit_floating(src, [&](auto src_tag) { detail::visit_floating(dst, [&](auto dst_tag) { fn(src_tag, dst_tag); }); });
}

inline void copy_floating(const void* src, DataType src_type, void* dst, DataType dst_type, std::size_t n,
                          double divisor = 1.0) {
  visit_floating_pair(src_type, dst_type, [&](auto src_tag, auto dst_tag) {
    using S = decltype(src_tag);
    using D = decltype(dst_tag);
    const S* in = static_cast<const S*>(src);
    D* out = static_cast<D*>(dst);
    for (std::size_t i = 0; i < n; ++i) out[i] = convert_floating<S, D>(in[i], divisor);
  });
}

CHORUS_NAMESPACE_END  // namespace chorus
