// RowParallelLinear (Megatron): Y = X A + b with A [in x out] split by input rows and X by its
// last dimension, so rank r computes the partial product X_r A_r and Y = sum_r X_r A_r: one
// all-reduce in forward (Megatron's g). In backward dY is the same on every rank and dX_r = dY A_r^T
// needs no communication (g's backward is the identity).
//
//   input_is_parallel  the input is already this rank's [rows x in/t] slice (the output of a
//                      column-parallel layer: how the MLP uses it). Otherwise (Megatron's default)
//                      the layer takes its slice of the full input and all-gathers dX back.
//   sequence_parallel  reduce-scatter the partial products by rows (tokens) instead of
//                      all-reducing them, so the output is this rank's [rows/t x out] block, and
//                      all-gather dY in backward. Needs input_is_parallel (as in Megatron).
//
// The bias is not split: it is added once, after the reduction. With sequence_parallel each rank
// sees different tokens, so its bias gradient is partial: call sum_sequence_parallel_grads() once
// per step, before the optimizer (Megatron all-reduces such parameters' grads in
// finalize_model_grads; forgetting it is Megatron issue #1446).
#pragma once

#include <cstddef>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "host_gemm.hpp"
#include "tensor_parallel_mappings.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct RowParallelOptions {
  bool input_is_parallel = false;  // Megatron's default
  bool sequence_parallel = false;
};

template <class Comm>
class RowParallelLinear {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::RowParallelLinear needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // weights and activations are host vectors (host_gemm)

 public:
  // `comm` is the tensor-parallel group; it must outlive the layer.
  RowParallelLinear(Comm& comm, std::size_t in_features, std::size_t out_features, RowParallelOptions options = {})
      : comm_(comm), in_(in_features), out_(out_features), options_(options) {
    const char* call = "parallel::RowParallelLinear";
    detail::check_features(call, comm.rank(), in_, out_);
    detail::check_tp_divides(call, comm.rank(), in_, comm.size(), "in_features");
    if (options_.sequence_parallel && !options_.input_is_parallel) {
      throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "sequence_parallel needs input_is_parallel");
    }
    local_in_ = in_ / static_cast<std::size_t>(comm.size());
    weight.assign(local_in_ * out_, 0.0f);
    bias.assign(out_, 0.0f);
    zero_grad();
  }

  std::size_t in_features() const { return in_; }
  std::size_t out_features() const { return out_; }
  std::size_t local_in_features() const { return local_in_; }

  // Every rank builds the same full weight [in x out] and bias [out] and keeps its rows of the
  // weight and the whole bias.
  void load_full(const std::vector<float>& full_weight, const std::vector<float>& full_bias) {
    const char* call = "parallel::RowParallelLinear::load_full";
    check_size(call, full_weight.size(), in_ * out_, "the full weight");
    check_size(call, full_bias.size(), out_, "the full bias");
    weight = rows_of_rank(full_weight, out_, comm_.rank(), comm_.size());
    bias = full_bias;
  }

  void zero_grad() {
    weight_grad.assign(local_in_ * out_, 0.0f);
    bias_grad.assign(out_, 0.0f);
  }

  // input [rows x in/t] (input_is_parallel) or [rows x in] -> [rows x out] ([rows/t x out] with
  // sequence_parallel).
  std::vector<float> forward(const std::vector<float>& input) {
    const char* call = "parallel::RowParallelLinear::forward";
    const std::vector<float> x = local_input(call, input);
    const std::size_t rows = x.size() / local_in_;
    std::vector<float> y(rows * out_);
    gemm(Transpose::no, Transpose::no, rows, out_, local_in_, x.data(), weight.data(), 0.0f, y.data());
    if (options_.sequence_parallel) {
      y = reduce_scatter_rows(comm_, y, out_);
    } else {
      sum_partials(comm_, y);  // g: every rank holds a partial product
    }
    add_bias(y.data(), y.size() / out_, out_, bias.data());
    return y;
  }

  // Accumulates this rank's weight and bias gradients; returns dX shaped like `input`.
  std::vector<float> backward(const std::vector<float>& input, const std::vector<float>& output_grad) {
    const char* call = "parallel::RowParallelLinear::backward";
    const std::vector<float> x = local_input(call, input);
    const std::size_t rows = x.size() / local_in_;
    const std::size_t t = static_cast<std::size_t>(comm_.size());
    if (options_.sequence_parallel) detail::check_tp_divides(call, comm_.rank(), rows, comm_.size(), "rows");
    check_size(call, output_grad.size(), (options_.sequence_parallel ? rows / t : rows) * out_, "output_grad");
    const std::vector<float> dy = options_.sequence_parallel ? gather_rows(comm_, output_grad, out_) : output_grad;
    gemm(Transpose::yes, Transpose::no, local_in_, out_, rows, x.data(), dy.data(), 1.0f, weight_grad.data());
    add_column_sums(output_grad.data(), output_grad.size() / out_, out_, bias_grad.data());
    std::vector<float> dx(rows * local_in_);
    gemm(Transpose::no, Transpose::yes, rows, local_in_, out_, dy.data(), weight.data(), 0.0f, dx.data());
    return options_.input_is_parallel ? dx : gather_columns(comm_, dx, local_in_);
  }

  // Sequence parallel only: makes bias_grad the sum over all tokens on every rank (one all-reduce).
  void sum_sequence_parallel_grads() {
    if (options_.sequence_parallel) sum_partials(comm_, bias_grad);
  }

  std::vector<float> weight;       // [in/t x out]: this rank's rows
  std::vector<float> bias;         // [out], the same on every rank
  std::vector<float> weight_grad;  // accumulated by backward(), cleared by zero_grad()
  std::vector<float> bias_grad;

 private:
  void check_size(const char* call, std::size_t got, std::size_t want, const char* what) const {
    detail::check_size(call, comm_.rank(), got, want, what);
  }
  std::vector<float> local_input(const char* call, const std::vector<float>& input) const {
    if (options_.input_is_parallel) {
      detail::check_tp_matrix(call, comm_.rank(), input.size(), local_in_, "the input");
      return input;
    }
    detail::check_tp_matrix(call, comm_.rank(), input.size(), in_, "the input");
    return columns_of_rank(input, in_, comm_.rank(), comm_.size());
  }

  Comm& comm_;
  std::size_t in_, out_, local_in_ = 0;
  RowParallelOptions options_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
