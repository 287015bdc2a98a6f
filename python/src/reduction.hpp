// How a torch reduction maps onto chorus: a torch dtype and ReduceOp become a chorus DataType and
// ReduceOp where chorus has them, a premultiplication then a sum (PREMUL_SUM), pairs of reals
// (complex SUM/AVG), or an all_gather folded locally in rank order (bitwise ops, which chorus's
// ReduceOp lacks; every rank folds the same bytes in the same order, so every rank gets the same bits).
// Anything else is refused with DistBackendError before any rank moves a byte.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chorus/core/data_type.hpp>
#include <chorus/core/reduce_op.hpp>

#include <optional>
#include <string>

namespace chorus_torch {

// chorus's type for a torch dtype whose elements chorus can combine; nullopt for the others (bool,
// int16, complex, float8, ...), which may still be moved as bytes.
inline std::optional<chorus::DataType> chorus_type(at::ScalarType type) {
  switch (type) {
    case at::kChar: return chorus::DataType::int8;
    case at::kByte: return chorus::DataType::uint8;
    case at::kInt: return chorus::DataType::int32;
    case at::kUInt32: return chorus::DataType::uint32;
    case at::kLong: return chorus::DataType::int64;
    case at::kUInt64: return chorus::DataType::uint64;
    case at::kHalf: return chorus::DataType::float16;
    case at::kFloat: return chorus::DataType::float32;
    case at::kDouble: return chorus::DataType::float64;
    case at::kBFloat16: return chorus::DataType::bfloat16;
    default: return std::nullopt;
  }
}

inline const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

struct Reduction {
  enum class Kind { direct, premultiply, fold };
  Kind kind = Kind::direct;
  chorus::DataType type = chorus::DataType::float32;  // direct, premultiply: the type chorus combines
  chorus::ReduceOp op = chorus::ReduceOp::sum;
  int lanes = 1;                                      // reals per element: 2 for complex
  c10d::ReduceOp::RedOpType fold = c10d::ReduceOp::SUM;  // fold: the bitwise op applied in rank order
  double factor = 1.0;                                // premultiply
  at::Tensor tensor_factor;                           // premultiply, when given as a tensor
};

[[noreturn]] inline void refuse(const char* call, const std::string& why) {
  TORCH_CHECK_WITH(DistBackendError, false, "chorus: ", call, ": ", why);
  throw;  // unreachable: TORCH_CHECK_WITH throws
}

inline Reduction plan_reduction(const char* call, at::ScalarType dtype, const c10d::ReduceOp& reduce_op) {
  const auto op = static_cast<c10d::ReduceOp::RedOpType>(reduce_op);
  const std::string what = std::string(op_name(op)) + " on " + std::string(c10::toString(dtype));
  Reduction r;
  const bool is_bool = dtype == at::kBool;
  const bool is_integer = at::isIntegralType(dtype, /*includeBool=*/false);
  if (op == c10d::ReduceOp::BAND || op == c10d::ReduceOp::BOR || op == c10d::ReduceOp::BXOR) {
    if (!is_bool && !is_integer) refuse(call, what + ": bitwise reductions need an integer or bool tensor");
    r.kind = Reduction::Kind::fold;
    r.fold = op;
    return r;
  }
  if (is_bool) {
    // bool as torch reduces it: SUM/MAX are "any", PRODUCT/MIN are "all" (0/1 bytes combined as uint8).
    r.type = chorus::DataType::uint8;
    if (op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::MAX) {
      r.op = chorus::ReduceOp::max;
    } else if (op == c10d::ReduceOp::PRODUCT || op == c10d::ReduceOp::MIN) {
      r.op = chorus::ReduceOp::min;
    } else {
      refuse(call, what + ": bool tensors reduce with SUM, PRODUCT, MIN, MAX, BAND, BOR or BXOR");
    }
    return r;
  }
  if (at::isComplexType(dtype)) {
    if (dtype != at::kComplexFloat && dtype != at::kComplexDouble) {
      refuse(call, what + ": complex reductions need complex64 or complex128");
    }
    if (op != c10d::ReduceOp::SUM && op != c10d::ReduceOp::AVG) {
      refuse(call, what + ": complex tensors reduce with SUM or AVG only (as pairs of reals)");
    }
    r.type = dtype == at::kComplexFloat ? chorus::DataType::float32 : chorus::DataType::float64;
    r.op = op == c10d::ReduceOp::SUM ? chorus::ReduceOp::sum : chorus::ReduceOp::avg;
    r.lanes = 2;
    return r;
  }
  const std::optional<chorus::DataType> type = chorus_type(dtype);
  if (!type) refuse(call, what + ": chorus cannot combine this dtype (it can move it: broadcast, all_gather, ...)");
  r.type = *type;
  switch (op) {
    case c10d::ReduceOp::SUM: r.op = chorus::ReduceOp::sum; break;
    case c10d::ReduceOp::AVG: r.op = chorus::ReduceOp::avg; break;
    case c10d::ReduceOp::PRODUCT: r.op = chorus::ReduceOp::prod; break;
    case c10d::ReduceOp::MIN: r.op = chorus::ReduceOp::min; break;
    case c10d::ReduceOp::MAX: r.op = chorus::ReduceOp::max; break;
    case c10d::ReduceOp::PREMUL_SUM: {
      if (!at::isFloatingType(dtype)) refuse(call, what + ": PREMUL_SUM needs a floating-point tensor");
      r.kind = Reduction::Kind::premultiply;
      r.op = chorus::ReduceOp::sum;
      const auto* supplement = dynamic_cast<const c10d::PreMulSumSupplement*>(reduce_op.supplement_.get());
      if (supplement == nullptr) refuse(call, what + ": PREMUL_SUM without its factor");
      if (supplement->tensor_factor.defined()) {
        r.tensor_factor = supplement->tensor_factor.to(at::kCPU);
      } else {
        r.factor = supplement->double_factor;
      }
      break;
    }
    default: refuse(call, what + ": unknown ReduceOp");
  }
  return r;
}

}  // namespace chorus_torch
