// chorus's element types and reductions as NCCL's. The numbering is NCCL's already (core/data_type.hpp,
// core/reduce_op.hpp), but the mapping is spelled out so a renumbering on either side cannot pass silently.
// What the loaded library lacks is `unsupported`, naming the type or op and the version: bfloat16 and avg
// came in NCCL 2.10, and the library found at run time may be older than the header compiled against.
// CUDA's own __half and __nv_bfloat16 are accepted by the typed calls beside chorus::half and
// chorus::bfloat16 (the same bits), since device code holds its data in CUDA's types.
#pragma once

#include "nccl_header.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {

inline constexpr int kBfloat16AndAvgVersion = 21000;  // NCCL_VERSION(2, 10, 0)

// "2.10.3" from NCCL_VERSION_CODE's encoding (X*10000 + Y*100 + Z from 2.9 on, X*1000 + Y*100 + Z before).
inline std::string version_text(int code) {
  const bool old = code < 10000;
  const int major = old ? code / 1000 : code / 10000;
  const int rest = old ? code % 1000 : code % 10000;
  return chorus::detail::concat(major, ".", rest / 100, ".", rest % 100);
}

inline ncclDataType_t to_nccl(DataType type, int version, const char* call, RankName rank) {
  switch (type) {
    case DataType::int8: return ncclInt8;
    case DataType::uint8: return ncclUint8;
    case DataType::int32: return ncclInt32;
    case DataType::uint32: return ncclUint32;
    case DataType::int64: return ncclInt64;
    case DataType::uint64: return ncclUint64;
    case DataType::float16: return ncclFloat16;
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
    case DataType::bfloat16:
      if (version < kBfloat16AndAvgVersion) {
        throw make_error(ErrorCode::unsupported, call, rank, "data type bfloat16 needs NCCL 2.10 or newer; the loaded NCCL is ",
                         version_text(version));
      }
      return ncclBfloat16;
  }
  throw make_error(ErrorCode::invalid_argument, call, rank, "data type ", static_cast<int>(type),
                   " is not a chorus::DataType");
}

inline ncclRedOp_t to_nccl(ReduceOp op, int version, const char* call, RankName rank) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::avg:
      if (version < kBfloat16AndAvgVersion) {
        throw make_error(ErrorCode::unsupported, call, rank, "reduce op avg needs NCCL 2.10 or newer; the loaded NCCL is ",
                         version_text(version));
      }
      return ncclAvg;
  }
  throw make_error(ErrorCode::invalid_argument, call, rank, "reduce op ", static_cast<int>(op), " is not a chorus::ReduceOp");
}

// The DataType of a typed call's element: chorus's ten types, and CUDA's half types.
template <class T>
struct element_type : data_type_of<T> {};
template <> struct element_type<__half> { static constexpr DataType value = DataType::float16; };
template <> struct element_type<__nv_bfloat16> { static constexpr DataType value = DataType::bfloat16; };

template <class T>
inline constexpr DataType element_type_v = element_type<std::remove_cv_t<T>>::value;

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
