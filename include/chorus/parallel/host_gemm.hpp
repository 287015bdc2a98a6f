// A small row-major float GEMM on the CPU, for the tensor-parallel layers, their tests and the
// examples. It is the reference, not a fast kernel: the layers exist to show how the weights are
// partitioned and which collectives join the pieces, and each dot product is summed in index order
// so results are deterministic. On GPUs the user's GEMM (cuBLAS) does this work.
#pragma once

#include <cstddef>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

enum class Transpose : bool { no = false, yes = true };

// c[m x n] = beta * c + op(a)[m x k] * op(b)[k x n], every matrix row-major and dense: a is
// stored [m x k] (or [k x m] when transposed), b [k x n] (or [n x k]). beta == 0 overwrites c
// without reading it.
inline void gemm(Transpose transpose_a, Transpose transpose_b, std::size_t m, std::size_t n, std::size_t k,
                 const float* a, const float* b, float beta, float* c) {
  const bool ta = transpose_a == Transpose::yes, tb = transpose_b == Transpose::yes;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float sum = 0;
      for (std::size_t l = 0; l < k; ++l) sum += (ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
      c[i * n + j] = beta == 0 ? sum : beta * c[i * n + j] + sum;
    }
  }
}

// y[rows x cols] += bias[cols] on every row.
inline void add_bias(float* y, std::size_t rows, std::size_t cols, const float* bias) {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) y[i * cols + j] += bias[j];
  }
}

// sums[cols] += the column sums of g[rows x cols]: a bias's gradient.
inline void add_column_sums(const float* g, std::size_t rows, std::size_t cols, float* sums) {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) sums[j] += g[i * cols + j];
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
