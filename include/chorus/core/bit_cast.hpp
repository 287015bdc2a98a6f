// A C++17 stand-in for std::bit_cast that also compiles for the device.
#pragma once

#include <cstring>
#include <type_traits>

#include "config.hpp"

CHORUS_NAMESPACE_BEGIN namespace detail {

template <class To, class From>
CHORUS_HOST_DEVICE inline To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  static_assert(std::is_trivially_copyable<From>::value && std::is_trivially_copyable<To>::value,
                "bit_cast needs trivially copyable types");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::detail
