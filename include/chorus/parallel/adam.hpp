// Adam: torch.optim.Adam's update with bias correction; weight_decay is decoupled (AdamW, as
// llm.c and most large-model training use it; 0 gives plain Adam). Like Sgd it keeps state (first
// and second moments) for exactly the span it updates, which is what ZeRO-1 shards.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled: p -= lr * weight_decay * p
};

class Adam {
 public:
  explicit Adam(AdamOptions options = {}) : options_(options) {
    if (!(options.lr >= 0) || !(options.beta1 >= 0 && options.beta1 < 1) || !(options.beta2 >= 0 && options.beta2 < 1) ||
        !(options.eps > 0) || !(options.weight_decay >= 0)) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::Adam: lr ", options.lr, ", betas ", options.beta1, "/",
                                         options.beta2, ", eps ", options.eps, ", weight_decay ", options.weight_decay));
    }
  }

  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }
  std::size_t state_elements() const { return m_.size() + v_.size(); }

  void step(float* params, const float* grads, std::size_t n) {
    if (m_.empty() && v_.empty()) {
      m_.resize(n);
      v_.resize(n);
    }
    if (m_.size() != n) {
      throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::parallel::Adam::step: ", n,
                                                                      " elements, but the state holds ", m_.size()));
    }
    ++t_;
    const double correction1 = 1 - std::pow(options_.beta1, static_cast<double>(t_));
    const double correction2 = 1 - std::pow(options_.beta2, static_cast<double>(t_));
    const auto b1 = static_cast<float>(options_.beta1), b2 = static_cast<float>(options_.beta2);
    const auto step_size = static_cast<float>(options_.lr / correction1);
    const auto root2 = static_cast<float>(std::sqrt(correction2));
    const auto eps = static_cast<float>(options_.eps), decay = static_cast<float>(options_.lr * options_.weight_decay);
    for (std::size_t i = 0; i < n; ++i) {
      const float g = grads[i];
      params[i] -= decay * params[i];
      m_[i] = b1 * m_[i] + (1 - b1) * g;
      v_[i] = b2 * v_[i] + (1 - b2) * g * g;
      params[i] -= step_size * m_[i] / (std::sqrt(v_[i]) / root2 + eps);
    }
  }

 private:
  AdamOptions options_;
  std::vector<float> m_, v_;
  unsigned long long t_ = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
