// VocabParallelCrossEntropy (Megatron's tensor_parallel/cross_entropy.py): softmax cross-entropy
// over logits split by vocabulary across the tensor-parallel group, as a column-parallel output
// layer leaves them. Rank r holds the logits of the contiguous vocabulary range
// [r V/t, (r+1) V/t) (Megatron's VocabUtility) for every row (token). Gathering the [rows x V]
// logits would move rows x V (t-1)/t floats per rank; the loss needs only three numbers per row,
// each one small all-reduce of `rows` floats:
//
//   1. max      the row's largest logit (MAX), subtracted before exp so nothing overflows
//   2. target   the target's (shifted) logit (SUM: only the rank owning the target id adds it)
//   3. sum exp  the row's sum of exp(logit - max) (SUM)
//
//   loss = log(sum exp) - target logit          (the unsplit softmax cross-entropy)
//
// Backward needs no communication: d loss / d logits = softmax - one_hot(target), and each rank
// holds its slice of the softmax (kept by forward) and knows whether it owns the target.
//
// Logits are row-major floats [rows x V/t]; targets are global token ids, the same on every rank.
// Label smoothing (Megatron's optional argument) is not provided.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "tensor_parallel_mappings.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

// The vocabulary ids [begin, end) rank `rank` of `parts` holds: contiguous, V/parts of them.
struct VocabRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool contains(std::int64_t id) const {
    return id >= 0 && static_cast<std::size_t>(id) >= begin && static_cast<std::size_t>(id) < end;
  }
};

inline VocabRange vocab_range_of_rank(std::size_t vocab_size, int rank, int parts) {
  detail::check_tp_divides("parallel::vocab_range_of_rank", rank, vocab_size, parts, "vocab_size");
  const std::size_t local = vocab_size / static_cast<std::size_t>(parts);
  return {local * static_cast<std::size_t>(rank), local * (static_cast<std::size_t>(rank) + 1)};
}

template <class Comm>
class VocabParallelCrossEntropy {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::VocabParallelCrossEntropy needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // reduces host vectors of per-row maxima and sums

 public:
  // What forward keeps for backward (Megatron saves the same in its autograd context).
  struct Saved {
    std::vector<float> softmax;        // [rows x V/t]: this rank's slice of the softmax
    std::vector<std::int64_t> targets;  // [rows]
  };

  // `comm` is the tensor-parallel group; it must outlive the object. vocab_size must be divisible
  // by its size (Megatron pads the vocabulary to a multiple of 128 t for this).
  VocabParallelCrossEntropy(Comm& comm, std::size_t vocab_size) : comm_(comm), vocab_(vocab_size) {
    const char* call = "parallel::VocabParallelCrossEntropy";
    if (vocab_ == 0) throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "vocab_size = 0");
    detail::check_tp_divides(call, comm.rank(), vocab_, comm.size(), "vocab_size");
    range_ = vocab_range_of_rank(vocab_, comm.rank(), comm.size());
  }

  std::size_t vocab_size() const { return vocab_; }
  std::size_t local_vocab_size() const { return range_.end - range_.begin; }
  VocabRange vocab_range() const { return range_; }

  // logits [rows x V/t], targets [rows] -> the loss of every row, the same on every rank. Collective:
  // exactly three all-reduces of rows floats. Sizes and target ids are checked first.
  std::vector<float> forward(const std::vector<float>& logits, const std::vector<std::int64_t>& targets, Saved& saved) {
    const char* call = "parallel::VocabParallelCrossEntropy::forward";
    const std::size_t rows = targets.size(), local = local_vocab_size();
    if (logits.size() != rows * local) {
      throw make_error(ErrorCode::invalid_argument, call, comm_.rank(), "logits have ", logits.size(),
                       " floats, expected ", rows, " rows (one per target) x ", local, " vocabulary entries");
    }
    for (std::size_t i = 0; i < rows; ++i) {
      if (targets[i] < 0 || static_cast<std::uint64_t>(targets[i]) >= vocab_) {
        throw make_error(ErrorCode::invalid_argument, call, comm_.rank(), "target ", i, " = ", targets[i],
                         " is outside the vocabulary [0, ", vocab_, ")");
      }
    }
    // 1. The row's max over the whole vocabulary.
    std::vector<float> max(rows, -std::numeric_limits<float>::infinity());
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < local; ++j) max[i] = std::max(max[i], logits[i * local + j]);
    }
    comm_.all_reduce(max.data(), max.data(), rows, ReduceOp::max);
    // 2. The target's shifted logit: only its owner contributes, the others add 0.
    std::vector<float> target_logit(rows, 0.0f);
    for (std::size_t i = 0; i < rows; ++i) {
      if (range_.contains(targets[i])) {
        target_logit[i] = logits[i * local + (static_cast<std::size_t>(targets[i]) - range_.begin)] - max[i];
      }
    }
    comm_.all_reduce(target_logit.data(), target_logit.data(), rows, ReduceOp::sum);
    // 3. The sum of exp(logit - max) over the whole vocabulary.
    saved.softmax.resize(logits.size());
    std::vector<float> sum_exp(rows, 0.0f);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < local; ++j) {
        saved.softmax[i * local + j] = std::exp(logits[i * local + j] - max[i]);
        sum_exp[i] += saved.softmax[i * local + j];
      }
    }
    comm_.all_reduce(sum_exp.data(), sum_exp.data(), rows, ReduceOp::sum);

    std::vector<float> loss(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      loss[i] = std::log(sum_exp[i]) - target_logit[i];
      for (std::size_t j = 0; j < local; ++j) saved.softmax[i * local + j] /= sum_exp[i];
    }
    saved.targets = targets;
    return loss;
  }

  // loss_grad [rows] (d total / d loss of each row: 1/rows for a mean) -> this rank's slice of
  // d total / d logits, [rows x V/t]: (softmax - one_hot(target)) * loss_grad. No communication.
  std::vector<float> backward(const Saved& saved, const std::vector<float>& loss_grad) const {
    const char* call = "parallel::VocabParallelCrossEntropy::backward";
    const std::size_t rows = saved.targets.size(), local = local_vocab_size();
    if (loss_grad.size() != rows || saved.softmax.size() != rows * local) {
      throw make_error(ErrorCode::invalid_argument, call, comm_.rank(), "loss_grad has ", loss_grad.size(),
                       " floats, expected ", rows, " (one per row of the forward)");
    }
    std::vector<float> grad = saved.softmax;
    for (std::size_t i = 0; i < rows; ++i) {
      if (range_.contains(saved.targets[i])) {
        grad[i * local + (static_cast<std::size_t>(saved.targets[i]) - range_.begin)] -= 1.0f;
      }
      for (std::size_t j = 0; j < local; ++j) grad[i * local + j] *= loss_grad[i];
    }
    return grad;
  }

 private:
  Comm& comm_;
  std::size_t vocab_;
  VocabRange range_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
