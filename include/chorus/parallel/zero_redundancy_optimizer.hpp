// ZeroRedundancyOptimizer: ZeRO stage 1 (Rajbhandari et al. 2020; DeepSpeed stage 1, Megatron's
// distributed optimizer, llm.c -z 1; docs/data-parallel.md). The optimizer state is sharded: rank r
// keeps Adam's moments (or SGD's velocity) for its 1/N of the parameters only. A step is
//   reduce_scatter(gradients)  rank r receives the averaged gradients of its shard
//   optimizer.step(shard)      the local update, on the shard alone
//   all_gather(parameters)     every rank gets every updated shard
// which moves as many bytes as the all-reduce of plain data parallelism (RS + AG = AR), and leaves
// the same parameters plain data parallelism with the same optimizer would.
//
// The tensors are laid end to end and padded with zeros to a multiple of N (llm.c refuses sizes not
// divisible by N instead), so a shard may span tensors. float32 only. The optimizer is any type with
// step(float* params, const float* grads, std::size_t n): Sgd and Adam are provided.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "broadcast_parameters.hpp"
#include "param_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

template <class Comm, class Optimizer>
class ZeroRedundancyOptimizer {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::ZeroRedundancyOptimizer needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // the flat buffers are host vectors; the shard's update runs on the CPU

 public:
  // Collective (checks that every rank holds the same tensors). average: gradients are divided by
  // the world size before they are summed, as GradientReducer does.
  ZeroRedundancyOptimizer(Comm& comm, std::vector<ParamView> params, std::vector<ParamView> grads, Optimizer optimizer,
                          bool average = true)
      : comm_(comm), params_(std::move(params)), grads_(std::move(grads)), optimizer_(std::move(optimizer)),
        average_(average) {
    const char* call = "parallel::ZeroRedundancyOptimizer";
    detail::check_not_empty(comm_, call);
    detail::check_views(comm_, params_, call);
    detail::check_views(comm_, grads_, call);
    if (params_.size() != grads_.size()) {
      throw make_error(ErrorCode::invalid_argument, call, comm_.rank(), params_.size(), " parameters but ",
                       grads_.size(), " gradients");
    }
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].type != DataType::float32 || grads_[i].type != DataType::float32) {
        throw make_error(ErrorCode::invalid_argument, call, comm_.rank(), "tensor ", i, " '", params_[i].name,
                         "' is not float32 (ZeRO-1 here keeps float32 parameters, gradients and state)");
      }
      if (params_[i].count != grads_[i].count) {
        throw make_error(ErrorCode::invalid_argument, call, comm_.rank(), "tensor ", i, " '", params_[i].name,
                         "' has ", params_[i].count, " elements and its gradient ", grads_[i].count);
      }
      total_ += params_[i].count;
    }
    verify_parameter_shapes(comm_, params_);
    const auto n = static_cast<std::size_t>(comm_.size());
    shard_ = (total_ + n - 1) / n;
    flat_params_.assign(shard_ * n, 0.0f);
    flat_grads_.assign(shard_ * n, 0.0f);
  }

  std::size_t total_elements() const { return total_; }
  std::size_t shard_elements() const { return shard_; }  // padded total / N
  std::size_t shard_offset() const { return shard_ * static_cast<std::size_t>(comm_.rank()); }
  Optimizer& optimizer() { return optimizer_; }

  // Collective: one reduce_scatter, the shard's update, one all_gather; params hold the result.
  void step() {
    const std::size_t lo = shard_offset(), hi = lo + shard_;
    const float divisor = average_ ? static_cast<float>(comm_.size()) : 1.0f;
    copy_in(grads_, flat_grads_, 0, total_, divisor);
    comm_.reduce_scatter(flat_grads_.data(), flat_grads_.data() + lo, shard_, ReduceOp::sum);
    copy_in(params_, flat_params_, lo, std::min(hi, total_), 1.0f);
    optimizer_.step(flat_params_.data() + lo, flat_grads_.data() + lo, shard_);
    comm_.all_gather(flat_params_.data() + lo, flat_params_.data(), shard_);
    copy_out(flat_params_, params_);
  }

 private:
  // Elements [lo, hi) of the tensors laid end to end, into the flat buffer at the same offsets.
  static void copy_in(const std::vector<ParamView>& views, std::vector<float>& flat, std::size_t lo, std::size_t hi,
                      float divisor) {
    std::size_t start = 0;
    for (const ParamView& v : views) {
      const std::size_t a = std::max(lo, start), b = std::min(hi, start + v.count);
      const auto* data = static_cast<const float*>(v.data);
      for (std::size_t i = a; i < b; ++i) flat[i] = divisor == 1.0f ? data[i - start] : data[i - start] / divisor;
      start += v.count;
    }
  }
  static void copy_out(const std::vector<float>& flat, const std::vector<ParamView>& views) {
    std::size_t start = 0;
    for (const ParamView& v : views) {
      std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(start), v.count, static_cast<float*>(v.data));
      start += v.count;
    }
  }

  Comm& comm_;
  std::vector<ParamView> params_, grads_;
  Optimizer optimizer_;
  bool average_;
  std::size_t total_ = 0;
  std::size_t shard_ = 0;
  std::vector<float> flat_params_, flat_grads_;  // padded; the communication buffers
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
