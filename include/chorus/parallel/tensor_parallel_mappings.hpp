// The collectives that join tensor-parallel pieces (Megatron's tensor_parallel/mappings.py), on
// row-major float matrices [rows x cols]: a row is a token, a column a feature. Megatron pairs
// them into autograd functions; chorus has no autograd, so each layer calls the forward half in
// forward() and the conjugate half in backward() (docs/tensor-parallel.md):
//
//   Megatron                                forward              backward
//   f  copy_to_tensor_model_parallel        identity             sum_partials
//   g  reduce_from_tensor_model_parallel    sum_partials         identity
//      gather_from_tensor_model_parallel    gather_columns       columns_of_rank
//      scatter_to_tensor_model_parallel     columns_of_rank      gather_columns
//   sequence parallel (dim 0 = tokens):
//      gather_from_sequence_parallel        gather_rows          reduce_scatter_rows
//      reduce_scatter_to_sequence_parallel  reduce_scatter_rows  gather_rows
//
// Every function checks that the sizes divide as they must and throws chorus::Error
// (invalid_argument) naming the call and the sizes otherwise, before communicating.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {
namespace detail {

inline void check_tp_matrix(const char* call, int rank, std::size_t size, std::size_t cols, const char* what) {
  if (cols == 0 || size % cols != 0) {
    throw make_error(ErrorCode::invalid_argument, call, rank, what, " has ", size, " floats, not a whole number of rows of ",
                     cols);
  }
}

inline void check_tp_divides(const char* call, int rank, std::size_t value, int parts, const char* what) {
  if (parts < 1 || value % static_cast<std::size_t>(parts) != 0) {
    throw make_error(ErrorCode::invalid_argument, call, rank, what, " = ", value, " is not divisible by the ", parts,
                     " tensor-parallel ranks");
  }
}

// A linear layer's shape: both sizes positive.
inline void check_features(const char* call, int rank, std::size_t in_features, std::size_t out_features) {
  if (in_features == 0 || out_features == 0) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "in_features = ", in_features,
                     ", out_features = ", out_features, ": both must be positive");
  }
}

// A tensor the caller passed has exactly the floats the layer expects.
inline void check_size(const char* call, int rank, std::size_t got, std::size_t want, const char* what) {
  if (got != want) {
    throw make_error(ErrorCode::invalid_argument, call, rank, what, " has ", got, " floats, expected ", want);
  }
}

}  // namespace detail

// Sum of every rank's partial tensor, in place (Megatron's g forward and f backward).
template <class Comm>
void sum_partials(Comm& comm, std::vector<float>& partial) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::sum_partials needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // the tensor-parallel pieces are host vectors
  comm.all_reduce(partial.data(), partial.data(), partial.size(), ReduceOp::sum);
}

// Rank `rank`'s block of columns of full [rows x cols]: [rows x cols/parts]. No communication.
inline std::vector<float> columns_of_rank(const std::vector<float>& full, std::size_t cols, int rank, int parts) {
  const char* call = "parallel::columns_of_rank";
  detail::check_tp_matrix(call, rank, full.size(), cols, "the matrix");
  detail::check_tp_divides(call, rank, cols, parts, "cols");
  const std::size_t rows = full.size() / cols, local = cols / static_cast<std::size_t>(parts);
  std::vector<float> block(rows * local);
  for (std::size_t i = 0; i < rows; ++i) {
    const auto from = full.begin() + static_cast<std::ptrdiff_t>(i * cols + static_cast<std::size_t>(rank) * local);
    std::copy(from, from + static_cast<std::ptrdiff_t>(local), block.begin() + static_cast<std::ptrdiff_t>(i * local));
  }
  return block;
}

// Every rank's column block side by side: [rows x local_cols] -> [rows x local_cols * size].
// all_gather concatenates whole blocks, so the blocks are then interleaved row by row.
template <class Comm>
std::vector<float> gather_columns(Comm& comm, const std::vector<float>& local, std::size_t local_cols) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::gather_columns needs a chorus communicator");
  static_assert(require_host_memory<Comm>());
  detail::check_tp_matrix("parallel::gather_columns", comm.rank(), local.size(), local_cols, "the local block");
  const auto t = static_cast<std::size_t>(comm.size());
  const std::size_t rows = local.size() / local_cols;
  std::vector<float> blocks(local.size() * t), full(local.size() * t);
  comm.all_gather(local.data(), blocks.data(), local.size());
  for (std::size_t r = 0; r < t; ++r) {
    for (std::size_t i = 0; i < rows; ++i) {
      const auto from = blocks.begin() + static_cast<std::ptrdiff_t>(r * local.size() + i * local_cols);
      std::copy(from, from + static_cast<std::ptrdiff_t>(local_cols),
                full.begin() + static_cast<std::ptrdiff_t>(i * local_cols * t + r * local_cols));
    }
  }
  return full;
}

// Rank `rank`'s block of rows (tokens) of full [rows x cols]: [rows/parts x cols]. No communication.
inline std::vector<float> rows_of_rank(const std::vector<float>& full, std::size_t cols, int rank, int parts) {
  const char* call = "parallel::rows_of_rank";
  detail::check_tp_matrix(call, rank, full.size(), cols, "the matrix");
  detail::check_tp_divides(call, rank, full.size() / cols, parts, "rows");
  const std::size_t block = full.size() / static_cast<std::size_t>(parts);
  const auto from = full.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank) * block);
  return std::vector<float>(from, from + static_cast<std::ptrdiff_t>(block));
}

// Every rank's rows stacked in rank order: [rows x cols] -> [rows * size x cols]. Rows are the
// outer dimension, so all_gather's concatenation is already the answer.
template <class Comm>
std::vector<float> gather_rows(Comm& comm, const std::vector<float>& local, std::size_t cols) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::gather_rows needs a chorus communicator");
  static_assert(require_host_memory<Comm>());
  detail::check_tp_matrix("parallel::gather_rows", comm.rank(), local.size(), cols, "the local block");
  std::vector<float> full(local.size() * static_cast<std::size_t>(comm.size()));
  comm.all_gather(local.data(), full.data(), local.size());
  return full;
}

// The sum over ranks of full [rows x cols], of which this rank keeps its block of rows.
template <class Comm>
std::vector<float> reduce_scatter_rows(Comm& comm, const std::vector<float>& full, std::size_t cols) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::reduce_scatter_rows needs a chorus communicator");
  static_assert(require_host_memory<Comm>());
  const char* call = "parallel::reduce_scatter_rows";
  detail::check_tp_matrix(call, comm.rank(), full.size(), cols, "the matrix");
  detail::check_tp_divides(call, comm.rank(), full.size() / cols, comm.size(), "rows");
  std::vector<float> local(full.size() / static_cast<std::size_t>(comm.size()));
  comm.reduce_scatter(full.data(), local.data(), local.size(), ReduceOp::sum);
  return local;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
