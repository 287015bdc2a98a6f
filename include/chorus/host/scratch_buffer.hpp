// A rank's scratch memory: cache-line aligned, grown only when a schedule needs more, never shrunk,
// so steady-state calls allocate nothing. Contents are not kept across growth.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

class ScratchBuffer {
 public:
  std::byte* reserve(std::size_t bytes) {
    if (bytes > capacity_) {
      data_.reset();
      capacity_ = 0;
      data_.reset(static_cast<std::byte*>(::operator new(bytes, kAlignment)));
      capacity_ = bytes;
    }
    return data_.get();
  }
  std::byte* data() const { return data_.get(); }
  std::size_t capacity() const { return capacity_; }

 private:
  static constexpr std::align_val_t kAlignment{64};
  struct Free {
    void operator()(std::byte* p) const { ::operator delete(p, kAlignment); }
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t capacity_ = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
