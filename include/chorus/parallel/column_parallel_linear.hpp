// ColumnParallelLinear (Megatron): Y = X A + b with A [in x out] split by output columns,
// A = [A_0 ... A_{t-1}], so rank r computes Y_r = X A_r + b_r on its own with no communication in
// forward. Every rank's A_r saw the whole input, so the input gradient dX = sum_r dY_r A_r^T is a
// sum over ranks: one all-reduce in backward (Megatron's f: identity forward, all-reduce backward).
//
//   gather_output      all-gather Y_r into the full Y (forward), keep your slice of dY (backward)
//   sequence_parallel  the input is this rank's block of rows (tokens), [rows/t x in]: all-gather
//                      it in forward and again in backward (for the weight gradient, as Megatron
//                      does to avoid keeping the full input), and reduce-scatter dX instead of
//                      all-reducing it. Not with gather_output (Megatron refuses it too).
//
// Matrices are row-major float vectors; rows are tokens. weight is this rank's [in x out/t]
// block, bias its [out/t] slice; backward() accumulates into weight_grad and bias_grad.
#pragma once

#include <cstddef>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "host_gemm.hpp"
#include "tensor_parallel_mappings.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct ColumnParallelOptions {
  bool gather_output = false;  // Megatron's default
  bool sequence_parallel = false;
};

template <class Comm>
class ColumnParallelLinear {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::ColumnParallelLinear needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // weights and activations are host vectors (host_gemm)

 public:
  // `comm` is the tensor-parallel group; it must outlive the layer.
  ColumnParallelLinear(Comm& comm, std::size_t in_features, std::size_t out_features, ColumnParallelOptions options = {})
      : comm_(comm), in_(in_features), out_(out_features), options_(options) {
    const char* call = "parallel::ColumnParallelLinear";
    detail::check_features(call, comm.rank(), in_, out_);
    detail::check_tp_divides(call, comm.rank(), out_, comm.size(), "out_features");
    if (options_.gather_output && options_.sequence_parallel) {
      throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "gather_output and sequence_parallel exclude each other");
    }
    local_out_ = out_ / static_cast<std::size_t>(comm.size());
    weight.assign(in_ * local_out_, 0.0f);
    bias.assign(local_out_, 0.0f);
    zero_grad();
  }

  std::size_t in_features() const { return in_; }
  std::size_t out_features() const { return out_; }
  std::size_t local_out_features() const { return local_out_; }

  // Megatron's CPU initialisation: every rank builds the same full weight [in x out] and bias [out]
  // (same seed) and keeps its columns, so the split layer equals the unsplit one.
  void load_full(const std::vector<float>& full_weight, const std::vector<float>& full_bias) {
    const char* call = "parallel::ColumnParallelLinear::load_full";
    check_size(call, full_weight.size(), in_ * out_, "the full weight");
    check_size(call, full_bias.size(), out_, "the full bias");
    weight = columns_of_rank(full_weight, out_, comm_.rank(), comm_.size());
    bias = columns_of_rank(full_bias, out_, comm_.rank(), comm_.size());
  }

  void zero_grad() {
    weight_grad.assign(in_ * local_out_, 0.0f);
    bias_grad.assign(local_out_, 0.0f);
  }

  // input [rows x in] ([rows/t x in] with sequence_parallel) -> [rows x out/t] ([rows x out] with
  // gather_output).
  std::vector<float> forward(const std::vector<float>& input) {
    const std::vector<float> x = full_input("parallel::ColumnParallelLinear::forward", input);
    const std::size_t rows = x.size() / in_;
    std::vector<float> y(rows * local_out_);
    gemm(Transpose::no, Transpose::no, rows, local_out_, in_, x.data(), weight.data(), 0.0f, y.data());
    add_bias(y.data(), rows, local_out_, bias.data());
    return options_.gather_output ? gather_columns(comm_, y, local_out_) : y;
  }

  // Accumulates this rank's weight and bias gradients; returns dX shaped like `input`.
  std::vector<float> backward(const std::vector<float>& input, const std::vector<float>& output_grad) {
    const char* call = "parallel::ColumnParallelLinear::backward";
    const std::vector<float> x = full_input(call, input);
    const std::size_t rows = x.size() / in_;
    check_size(call, output_grad.size(), rows * (options_.gather_output ? out_ : local_out_), "output_grad");
    const std::vector<float> dy =
        options_.gather_output ? columns_of_rank(output_grad, out_, comm_.rank(), comm_.size()) : output_grad;
    gemm(Transpose::yes, Transpose::no, in_, local_out_, rows, x.data(), dy.data(), 1.0f, weight_grad.data());
    add_column_sums(dy.data(), rows, local_out_, bias_grad.data());
    std::vector<float> dx(rows * in_);
    gemm(Transpose::no, Transpose::yes, rows, in_, local_out_, dy.data(), weight.data(), 0.0f, dx.data());
    if (options_.sequence_parallel) return reduce_scatter_rows(comm_, dx, in_);
    sum_partials(comm_, dx);  // f's backward: every rank's A_r contributed to dX
    return dx;
  }

  std::vector<float> weight;       // [in x out/t]: this rank's columns
  std::vector<float> bias;         // [out/t]
  std::vector<float> weight_grad;  // accumulated by backward(), cleared by zero_grad()
  std::vector<float> bias_grad;

 private:
  void check_size(const char* call, std::size_t got, std::size_t want, const char* what) const {
    detail::check_size(call, comm_.rank(), got, want, what);
  }
  std::vector<float> full_input(const char* call, const std::vector<float>& input) {
    detail::check_tp_matrix(call, comm_.rank(), input.size(), in_, "the input");
    return options_.sequence_parallel ? gather_rows(comm_, input, in_) : input;
  }

  Comm& comm_;
  std::size_t in_, out_, local_out_ = 0;
  ColumnParallelOptions options_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
