// LinearScalingLr: the learning rate for a larger global batch, by Goyal et al. 2017 ("Accurate,
// Large Minibatch SGD", arXiv 1706.02677; docs/data-parallel.md). The linear scaling rule: when the
// minibatch grows k times, multiply the learning rate by k (their reference: 0.1 x batch / 256).
// Gradual warmup: start at the base rate and raise it by the same amount every iteration until it
// reaches the scaled rate after warmup_steps (they used 5 epochs); constant warmup spiked the error.
// What happens after warmup (step decay, cosine) is the caller's schedule, multiplied on top.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

class LinearScalingLr {
 public:
  LinearScalingLr(double base_lr, double base_batch, double global_batch, std::uint64_t warmup_steps = 0)
      : base_lr_(base_lr), target_lr_(base_lr * global_batch / base_batch), warmup_steps_(warmup_steps) {
    if (!(base_lr >= 0) || !(base_batch > 0) || !(global_batch > 0)) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::LinearScalingLr: base_lr ", base_lr, ", base_batch ",
                                         base_batch, ", global_batch ", global_batch,
                                         " (the rate must be >= 0 and the batches > 0)"));
    }
  }

  // Warmup over epochs, as the paper states it: warmup_epochs x steps_per_epoch steps, rounded down. A
  // negative, NaN or infinite count, or one of 2^64 steps or more, has no step count to convert to.
  static LinearScalingLr with_warmup_epochs(double base_lr, double base_batch, double global_batch,
                                            double warmup_epochs, std::uint64_t steps_per_epoch) {
    const double steps = warmup_epochs * static_cast<double>(steps_per_epoch);
    constexpr double kTwoTo64 = 18446744073709551616.0;
    if (!(warmup_epochs >= 0) || !(steps < kTwoTo64)) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::LinearScalingLr::with_warmup_epochs: warmup_epochs ",
                                         warmup_epochs, " x steps_per_epoch ", steps_per_epoch,
                                         " (the epochs must be >= 0 and the steps fewer than 2^64)"));
    }
    return LinearScalingLr(base_lr, base_batch, global_batch, static_cast<std::uint64_t>(steps));
  }

  double base_lr() const { return base_lr_; }
  double target_lr() const { return target_lr_; }  // base_lr x global_batch / base_batch
  std::uint64_t warmup_steps() const { return warmup_steps_; }

  // The rate for optimizer step `step` (0-based): base_lr at step 0, target_lr from warmup_steps on.
  double lr(std::uint64_t step) const {
    if (step >= warmup_steps_) return target_lr_;
    const double progress = static_cast<double>(step) / static_cast<double>(warmup_steps_);
    return base_lr_ + (target_lr_ - base_lr_) * progress;
  }

 private:
  double base_lr_;
  double target_lr_;
  std::uint64_t warmup_steps_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
