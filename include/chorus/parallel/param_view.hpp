// ParamView: a named, non-owning view of one tensor (a parameter or its gradient) as the
// data-parallel primitives see it: a name for error messages, an element type, a pointer and an
// element count. Shapes do not matter to communication, so a view is flat; the caller keeps the
// memory alive for as long as a primitive holds the view.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/data_type.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct ParamView {
  std::string name;
  DataType type = DataType::float32;
  void* data = nullptr;
  std::size_t count = 0;

  std::size_t bytes() const { return count * size_of(type); }
};

template <class T>
ParamView param_view(std::string name, T* data, std::size_t count) {
  return ParamView{std::move(name), data_type_v<T>, static_cast<void*>(data), count};
}

template <class T>
ParamView param_view(std::string name, std::vector<T>& values) {
  return param_view(std::move(name), values.data(), values.size());
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
