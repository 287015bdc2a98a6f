// ParallelMlp: Megatron's transformer MLP, h -> f -> h with GeLU between: a column-parallel layer
// (no gather: each rank keeps f/t hidden features), GeLU on those features alone (it acts
// element-wise, so columns stay independent), then a row-parallel layer taking that slice as its
// input. The only communication is the row layer's all-reduce in forward and the column layer's
// all-reduce of dX in backward: one each per layer, of rows x h floats.
//
// With sequence_parallel the input and output are this rank's block of rows (tokens), [rows/t x h]:
// the all-reduces become an all-gather before the column layer and a reduce-scatter after the row
// layer (and the reverse in backward, plus the all-gather of the input again for the column
// layer's weight gradient): the same bytes as all-reduce, and 1/t of the activations held outside
// the layer (Korthikanti et al.). The row layer's bias gradient is then partial per rank:
// sum_sequence_parallel_grads() once per step completes it.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "column_parallel_linear.hpp"
#include "row_parallel_linear.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

// GeLU, tanh form (Megatron's bias_gelu / openai_gelu), and its derivative.
inline float gelu(float x) {
  const float k = 0.7978845608f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}
inline float gelu_grad(float x) {
  const float k = 0.7978845608f;
  const float t = std::tanh(k * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}

struct ParallelMlpOptions {
  bool sequence_parallel = false;
};

template <class Comm>
class ParallelMlp {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::ParallelMlp needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // its layers compute on the CPU

 public:
  // What forward keeps for backward: the input as given and this rank's f/t hidden features.
  struct Saved {
    std::vector<float> input;
    std::vector<float> pre_activation;  // [rows x f/t]
    std::vector<float> activation;      // gelu(pre_activation)
  };

  // `comm` is the tensor-parallel group; ffn_hidden must be divisible by its size.
  ParallelMlp(Comm& comm, std::size_t hidden, std::size_t ffn_hidden, ParallelMlpOptions options = {})
      : fc1(comm, hidden, ffn_hidden, ColumnParallelOptions{false, options.sequence_parallel}),
        fc2(comm, ffn_hidden, hidden, RowParallelOptions{true, options.sequence_parallel}) {}

  // Full weights, the same on every rank: w1 [h x f], b1 [f], w2 [f x h], b2 [h].
  void load_full(const std::vector<float>& w1, const std::vector<float>& b1, const std::vector<float>& w2,
                 const std::vector<float>& b2) {
    fc1.load_full(w1, b1);
    fc2.load_full(w2, b2);
  }

  void zero_grad() {
    fc1.zero_grad();
    fc2.zero_grad();
  }

  std::vector<float> forward(const std::vector<float>& input, Saved& saved) {
    saved.input = input;
    saved.pre_activation = fc1.forward(input);
    saved.activation.resize(saved.pre_activation.size());
    for (std::size_t i = 0; i < saved.activation.size(); ++i) saved.activation[i] = gelu(saved.pre_activation[i]);
    return fc2.forward(saved.activation);
  }

  // Accumulates both layers' gradients; returns dX shaped like the input.
  std::vector<float> backward(const Saved& saved, const std::vector<float>& output_grad) {
    std::vector<float> grad = fc2.backward(saved.activation, output_grad);
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] *= gelu_grad(saved.pre_activation[i]);
    return fc1.backward(saved.input, grad);
  }

  void sum_sequence_parallel_grads() { fc2.sum_sequence_parallel_grads(); }

  ColumnParallelLinear<Comm> fc1;  // h -> f, split by output columns
  RowParallelLinear<Comm> fc2;     // f -> h, split by input rows
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
