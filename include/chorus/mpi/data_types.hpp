// chorus's element types and reductions as MPI's, for NativeComm. Eight of the ten types are MPI
// built-ins. half and bfloat16 are not: they travel as a two-byte contiguous type and reduce through
// user-defined ops that run chorus's own element loop (core/reduce_op.hpp). int8 and uint8 sums and
// products go through chorus's loop too: Open MPI 4.1's AVX reduction component saturates 8-bit sums
// on its vectorised paths (uint8 200 + 201 gives 255 from 64 elements up), where chorus documents
// wrap-around. avg has no MPI op: the caller sums, then divides (runtime/element_ops.hpp's
// finish_avg), as NCCL defines it.
//
// The user-defined types and ops are created on first use and freed when MPI finalises (an
// attribute on MPI_COMM_SELF, whose delete callback MPI runs first thing in MPI_Finalize).
#pragma once

#include "mpi_header.hpp"

#include <cstdint>

#include "../core/bfloat16.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/half.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

// inout[i] = in[i] op inout[i], through chorus's loop for T.
template <class T, ReduceOp Op>
void reduce_with_chorus(void* in, void* inout, int* length, MPI_Datatype*) {
  combine_range(Op, static_cast<const T*>(in), static_cast<const T*>(inout), static_cast<T*>(inout),
                static_cast<std::size_t>(*length));
}

// The two-byte type and the user-defined ops that run chorus's loop.
class ChorusOps {
 public:
  static ChorusOps& get() {
    static ChorusOps types;  // thread-safe first use; MPI must be initialised by then
    return types;
  }

  MPI_Datatype two_byte_type() const { return type_; }
  // type: float16, bfloat16, int8 or uint8; op: sum, prod, min or max.
  MPI_Op op(DataType type, ReduceOp op) const { return ops_[row(type)][static_cast<int>(op)]; }

 private:
  static constexpr int kRows = 4;
  static int row(DataType type) {
    switch (type) {
      case DataType::bfloat16: return 1;
      case DataType::int8: return 2;
      case DataType::uint8: return 3;
      default: return 0;
    }
  }

  ChorusOps() {
    MPI_Type_contiguous(2, MPI_BYTE, &type_);
    MPI_Type_commit(&type_);
    create<half>(0);
    create<bfloat16>(1);
    create<std::int8_t>(2);
    create<std::uint8_t>(3);
    int key = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &release, &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, this);
  }

  template <class T>
  void create(int row) {
    MPI_Op_create(&reduce_with_chorus<T, ReduceOp::sum>, 1, &ops_[row][static_cast<int>(ReduceOp::sum)]);
    MPI_Op_create(&reduce_with_chorus<T, ReduceOp::prod>, 1, &ops_[row][static_cast<int>(ReduceOp::prod)]);
    MPI_Op_create(&reduce_with_chorus<T, ReduceOp::max>, 1, &ops_[row][static_cast<int>(ReduceOp::max)]);
    MPI_Op_create(&reduce_with_chorus<T, ReduceOp::min>, 1, &ops_[row][static_cast<int>(ReduceOp::min)]);
  }

  static int release(MPI_Comm, int, void* attribute, void*) {
    auto* self = static_cast<ChorusOps*>(attribute);
    for (auto& row : self->ops_) {
      for (int i = 0; i < 4; ++i) MPI_Op_free(&row[i]);
    }
    MPI_Type_free(&self->type_);
    return MPI_SUCCESS;
  }

  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op ops_[kRows][4] = {};
};

inline MPI_Datatype to_mpi(DataType type) {
  switch (type) {
    case DataType::int8: return MPI_INT8_T;
    case DataType::uint8: return MPI_UINT8_T;
    case DataType::int32: return MPI_INT32_T;
    case DataType::uint32: return MPI_UINT32_T;
    case DataType::int64: return MPI_INT64_T;
    case DataType::uint64: return MPI_UINT64_T;
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
    case DataType::float16:
    case DataType::bfloat16: return ChorusOps::get().two_byte_type();
  }
  return MPI_DATATYPE_NULL;
}

// avg maps to sum (the caller divides afterwards).
inline MPI_Op to_mpi(ReduceOp op, DataType type) {
  const ReduceOp summed = op == ReduceOp::avg ? ReduceOp::sum : op;
  if (type == DataType::float16 || type == DataType::bfloat16) return ChorusOps::get().op(type, summed);
  const bool eight_bit = type == DataType::int8 || type == DataType::uint8;
  if (eight_bit && (summed == ReduceOp::sum || summed == ReduceOp::prod)) return ChorusOps::get().op(type, summed);
  switch (summed) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::avg: break;
  }
  return MPI_SUM;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
