// The typed work of a collective behind type-erased pointers, so the executor is compiled once
// rather than once per element type. combine_range's loops stay typed (and vectorised).
#pragma once

#include <cstddef>

#include "../core/reduce_op.hpp"

namespace chorus::host::detail {

struct Kernels {
  // dst[i] = a[i] op b[i]
  void (*combine)(ReduceOp op, const void* a, const void* b, void* dst, std::size_t count);
  // data[i] /= ranks (avg's finishing pass)
  void (*finish_avg)(void* data, std::size_t count, int ranks);
};

template <class T>
void combine_erased(ReduceOp op, const void* a, const void* b, void* dst, std::size_t count) {
  combine_range(op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(dst), count);
}

template <class T>
void finish_avg_erased(void* data, std::size_t count, int ranks) {
  finish_avg(static_cast<T*>(data), count, ranks);
}

template <class T>
const Kernels* kernels_for() {
  static constexpr Kernels kernels{&combine_erased<T>, &finish_avg_erased<T>};
  return &kernels;
}

}  // namespace chorus::host::detail
