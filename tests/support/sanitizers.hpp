// Whether this test program was built with AddressSanitizer or ThreadSanitizer. The release stage
// runs every exhaustive sweep at full size; the sanitizer stages, 3-10x slower per instruction and
// looking for memory and threading errors rather than wrong answers, run the same sweeps over a
// smaller range (each such test says what it drops).
#pragma once

namespace chorus::test {

// GCC defines __SANITIZE_*__; clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
inline constexpr bool kAddressSanitized = __has_feature(address_sanitizer);
#else
inline constexpr bool kAddressSanitized = false;
#endif
// ThreadSanitizer alone: the stage that looks for races, which do not depend on what the bytes mean.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitized = true;
#elif defined(__has_feature)
inline constexpr bool kThreadSanitized = __has_feature(thread_sanitizer);
#else
inline constexpr bool kThreadSanitized = false;
#endif
inline constexpr bool kSanitized = kAddressSanitized || kThreadSanitized;

}  // namespace chorus::test
