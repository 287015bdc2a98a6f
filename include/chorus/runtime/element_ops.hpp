// The element-type-specific work of a collective (combining two ranges, avg's final divide) behind
// type-erased pointers, so the step interpreter is compiled once rather than once per element
// type. The loops inside stay typed (and vectorised). Not to be confused with GPU kernels: these
// run on the host, element by element.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

struct ElementOps {
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
const ElementOps* element_ops() {
  static constexpr ElementOps ops{&combine_erased<T>, &finish_avg_erased<T>};
  return &ops;
}

// For the type-erased collectives. An invalid `type` gets float's table; check_type refuses it
// before the table is used.
inline const ElementOps* element_ops(DataType type) {
  return visit_type(type, [](auto value) { return element_ops<decltype(value)>(); });
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
