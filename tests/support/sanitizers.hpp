// Whether this test program was built with AddressSanitizer or ThreadSanitizer. The release stage
// runs every exhaustive sweep at full size; the sanitizer stages, 3-10x slower per instruction and
// looking for memory and threading errors rather than wrong answers, run the same sweeps over a
// smaller range (each such test says what it drops).
#pragma once

namespace chorus::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// ThreadSanitizer alone: the stage that looks for races, which do not depend on what the bytes mean.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitized = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitized = true;
#else
inline constexpr bool kThreadSanitized = false;
#endif
#else
inline constexpr bool kThreadSanitized = false;
#endif

}  // namespace chorus::test
