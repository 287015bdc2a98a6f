// LocalSgd: the asynchronous-leaning alternative to synchronous data parallelism (docs/
// data-parallel.md). Every rank takes `period` optimizer steps on its own gradients without
// communicating, then all ranks average their parameters; period 1 with plain SGD is the same
// as averaging gradients every step. One all-reduce per tensor per period instead of one per step.
#pragma once

#include <cstdint>
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

// Collective: every rank's tensors become the element-wise mean over ranks, in place.
template <class Comm>
void average_parameters(Comm& comm, const std::vector<ParamView>& params) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::average_parameters needs a chorus communicator");
  detail::check_not_empty(comm, "parallel::average_parameters");
  detail::check_views(comm, params, "parallel::average_parameters");
  for (const ParamView& p : params) {
    if (!is_floating(p.type)) {
      throw make_error(ErrorCode::invalid_argument, "parallel::average_parameters", comm.rank(), "tensor '", p.name,
                       "' is ", to_string(p.type), "; only floating-point tensors are averaged");
    }
  }
  for (const ParamView& p : params) comm.all_reduce(p.data, p.data, p.count, p.type, ReduceOp::avg);
}

template <class Comm>
class LocalSgd {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::LocalSgd needs a chorus communicator");

 public:
  LocalSgd(Comm& comm, std::vector<ParamView> params, std::uint64_t period)
      : comm_(comm), params_(std::move(params)), period_(period) {
    detail::check_not_empty(comm_, "parallel::LocalSgd");
    if (period_ == 0) {
      throw make_error(ErrorCode::invalid_argument, "parallel::LocalSgd", comm_.rank(), "the period must be at least 1");
    }
  }

  // Call after every local optimizer step; every period-th call averages the parameters
  // (collective) and returns true.
  bool after_step() {
    if (++steps_ % period_ != 0) return false;
    average_parameters(comm_, params_);
    return true;
  }

  std::uint64_t period() const { return period_; }
  std::uint64_t steps() const { return steps_; }

 private:
  Comm& comm_;
  std::vector<ParamView> params_;
  std::uint64_t period_;
  std::uint64_t steps_ = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
