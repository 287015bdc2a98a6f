// copy_floating: copy n floating-point elements between buffers of possibly different types
// (float32, float64, float16, bfloat16), dividing by `divisor` on the way. It is how gradients
// enter a bucket (averaged, maybe compressed to 16 bits) and leave it again. The division happens
// in double, which for float32 rounds exactly as a float division would.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/bfloat16.hpp"
#include "../core/data_type.hpp"
#include "../core/half.hpp"

namespace chorus::parallel {
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
double to_double(T value) {
  if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

template <class T>
T from_double(double value) {
  if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

}  // namespace detail

inline void copy_floating(const void* src, DataType src_type, void* dst, DataType dst_type, std::size_t n,
                          double divisor = 1.0) {
  detail::visit_floating(src_type, [&](auto src_tag) {
    detail::visit_floating(dst_type, [&](auto dst_tag) {
      using S = decltype(src_tag);
      using D = decltype(dst_tag);
      const S* in = static_cast<const S*>(src);
      D* out = static_cast<D*>(dst);
      if (divisor == 1.0) {
        for (std::size_t i = 0; i < n; ++i) out[i] = detail::from_double<D>(detail::to_double(in[i]));
      } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = detail::from_double<D>(detail::to_double(in[i]) / divisor);
      }
    });
  });
}

}  // namespace chorus::parallel
