// Where a communicator's buffers live, and when a call's result may be read: the part of the
// communicator contract (communicator.hpp, docs/communicator.md) that generic code needs before it
// touches a buffer with the CPU.
//
// A communicator whose buffers are device memory says so with a member
//   static constexpr chorus::MemorySpace memory_space = chorus::MemorySpace::device;
// one without it is host: the common case needs no declaration. memory_space_v<C> reads it.
//
// The completion rule, one for every communicator:
//   - host communicators: a result may be read when the call returns (completes_on_return_v);
//   - device communicators: once the work enqueued on the stream has run, as observed by wait()
//     or by later work on that stream; the call itself returns when the work is enqueued.
// A type whose completion differs from its memory's (a host-memory backend that returns early)
// says so with `static constexpr bool completes_on_return = ...;`.
#pragma once

#include <type_traits>

#include "config.hpp"

CHORUS_NAMESPACE_BEGIN

enum class MemorySpace { host, device };

inline const char* to_string(MemorySpace space) { return space == MemorySpace::host ? "host" : "device"; }

namespace detail {

template <class C, class = void>
struct declared_memory_space {
  static constexpr MemorySpace value = MemorySpace::host;
};
// Only a member of type MemorySpace counts, so an unrelated `memory_space` cannot be misread.
template <class C>
struct declared_memory_space<
    C, std::enable_if_t<std::is_same<std::remove_cv_t<decltype(C::memory_space)>, MemorySpace>::value>> {
  static constexpr MemorySpace value = C::memory_space;
};

template <class C, class = void>
struct declared_completion {
  static constexpr bool value = declared_memory_space<C>::value == MemorySpace::host;
};
template <class C>
struct declared_completion<C, std::enable_if_t<std::is_same<std::remove_cv_t<decltype(C::completes_on_return)>, bool>::value>> {
  static constexpr bool value = C::completes_on_return;
};

template <class C>
using bare_t = std::remove_cv_t<std::remove_reference_t<C>>;

}  // namespace detail

template <class C>
inline constexpr MemorySpace memory_space_v = detail::declared_memory_space<detail::bare_t<C>>::value;

template <class C>
inline constexpr bool completes_on_return_v = detail::declared_completion<detail::bare_t<C>>::value;

// In generic code that reads or writes a communicator's buffers with the CPU (or hands it host
// vectors), as `static_assert(require_host_memory<Comm>())`: a device communicator stops the build
// here with one message, and the compiler's "required from" line names the generic code.
template <class C>
constexpr bool require_host_memory() {
  static_assert(memory_space_v<C> == MemorySpace::host,
                "chorus: this generic code copies with the CPU: it needs a communicator whose buffers are host memory "
                "(memory_space_v<Comm> == MemorySpace::host); device communicators (cuda, nccl) take device pointers and "
                "complete on their stream: pass a host communicator (host::Comm, mpi::Comm), or stage the data through "
                "host memory yourself after wait()");
  return true;  // one error, the one above
}

CHORUS_NAMESPACE_END  // namespace chorus
