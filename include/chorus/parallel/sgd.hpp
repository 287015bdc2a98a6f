// Sgd: stochastic gradient descent with momentum and weight decay, PyTorch's torch.optim.SGD
// update (dampening 0, no Nesterov). It updates whatever span it is given and keeps state for
// exactly that span, so plain data parallelism hands it all parameters and ZeRO-1 (zero.hpp) only
// this rank's shard, and both compute the same numbers.
#pragma once

#include <cstddef>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

class Sgd {
 public:
  explicit Sgd(double lr, double momentum = 0.0, double weight_decay = 0.0)
      : lr_(lr), momentum_(momentum), weight_decay_(weight_decay) {
    if (!(lr >= 0) || !(momentum >= 0) || !(weight_decay >= 0)) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::Sgd: lr ", lr, ", momentum ", momentum, ", weight_decay ",
                                         weight_decay, " (all must be >= 0)"));
    }
  }

  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  std::size_t state_elements() const { return velocity_.size(); }

  void step(float* params, const float* grads, std::size_t n) {
    if (momentum_ != 0 && velocity_.empty()) velocity_.resize(n);
    if (momentum_ != 0 && velocity_.size() != n) {
      throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::parallel::Sgd::step: ", n,
                                                                      " elements, but the state holds ", velocity_.size()));
    }
    const auto lr = static_cast<float>(lr_), momentum = static_cast<float>(momentum_),
               decay = static_cast<float>(weight_decay_);
    for (std::size_t i = 0; i < n; ++i) {
      float d = grads[i] + decay * params[i];
      if (momentum != 0) {
        velocity_[i] = steps_ == 0 ? d : momentum * velocity_[i] + d;  // PyTorch: the first step takes d as is
        d = velocity_[i];
      }
      params[i] -= lr * d;
    }
    ++steps_;
  }

 private:
  double lr_, momentum_, weight_decay_;
  std::vector<float> velocity_;
  std::size_t steps_ = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
