// DataType: the ten element types every backend moves and reduces, numbered as NCCL numbers them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "bfloat16.hpp"
#include "config.hpp"
#include "half.hpp"

CHORUS_NAMESPACE_BEGIN

enum class DataType : int {
  int8 = 0,
  uint8 = 1,
  int32 = 2,
  uint32 = 3,
  int64 = 4,
  uint64 = 5,
  float16 = 6,
  float32 = 7,
  float64 = 8,
  bfloat16 = 9,
};

inline constexpr int kDataTypeCount = 10;

inline const char* to_string(DataType type) {
  switch (type) {
    case DataType::int8: return "int8";
    case DataType::uint8: return "uint8";
    case DataType::int32: return "int32";
    case DataType::uint32: return "uint32";
    case DataType::int64: return "int64";
    case DataType::uint64: return "uint64";
    case DataType::float16: return "float16";
    case DataType::float32: return "float32";
    case DataType::float64: return "float64";
    case DataType::bfloat16: return "bfloat16";
  }
  return "unknown";
}

CHORUS_HOST_DEVICE constexpr std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::int8:
    case DataType::uint8: return 1;
    case DataType::float16:
    case DataType::bfloat16: return 2;
    case DataType::int32:
    case DataType::uint32:
    case DataType::float32: return 4;
    case DataType::int64:
    case DataType::uint64:
    case DataType::float64: return 8;
  }
  return 0;
}

constexpr bool is_floating(DataType type) {
  return type == DataType::float16 || type == DataType::bfloat16 || type == DataType::float32 ||
         type == DataType::float64;
}

template <class T>
struct data_type_of;  // undefined for unsupported types: a compile error names T
template <> struct data_type_of<std::int8_t> { static constexpr DataType value = DataType::int8; };
template <> struct data_type_of<std::uint8_t> { static constexpr DataType value = DataType::uint8; };
template <> struct data_type_of<std::int32_t> { static constexpr DataType value = DataType::int32; };
template <> struct data_type_of<std::uint32_t> { static constexpr DataType value = DataType::uint32; };
template <> struct data_type_of<std::int64_t> { static constexpr DataType value = DataType::int64; };
template <> struct data_type_of<std::uint64_t> { static constexpr DataType value = DataType::uint64; };
template <> struct data_type_of<half> { static constexpr DataType value = DataType::float16; };
template <> struct data_type_of<float> { static constexpr DataType value = DataType::float32; };
template <> struct data_type_of<double> { static constexpr DataType value = DataType::float64; };
template <> struct data_type_of<bfloat16> { static constexpr DataType value = DataType::bfloat16; };

template <class T>
inline constexpr DataType data_type_v = data_type_of<std::remove_cv_t<T>>::value;

// Calls fn(T{}) with the C++ type behind a runtime DataType (for tools that pick the type by flag).
template <class Fn>
decltype(auto) visit_type(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::int8: return fn(std::int8_t{});
    case DataType::uint8: return fn(std::uint8_t{});
    case DataType::int32: return fn(std::int32_t{});
    case DataType::uint32: return fn(std::uint32_t{});
    case DataType::int64: return fn(std::int64_t{});
    case DataType::uint64: return fn(std::uint64_t{});
    case DataType::float16: return fn(half{});
    case DataType::float32: return fn(float{});
    case DataType::float64: return fn(double{});
    case DataType::bfloat16: return fn(bfloat16{});
  }
  return fn(float{});
}

CHORUS_NAMESPACE_END  // namespace chorus
