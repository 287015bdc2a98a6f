// Environment knobs. Read on every call (cheap: a getenv) so tests and tools can change them at run time.
//   CHORUS_TIMEOUT_MS  bound on every wait, in milliseconds (default 30000; a positive integer, at most
//                      env::kMaxTimeoutMs = 7 days)
//   CHORUS_KERNEL_TIMEOUT_MS  bound on device work, in milliseconds: every wait inside a chorus kernel (and
//                      its CPU twin), and how long work queued ahead of a device communicator's call may
//                      hold its stream (default 600000 = 10 minutes, as torch's default collective timeout:
//                      a rank that is late by a checkpoint's I/O must not break the communicator; at most
//                      kMaxTimeoutMs). The host's wait for a kernel is bounded by it plus a grace period
//                      from the kernel's start.
//   CHORUS_LOG         none | warn | info | debug  (default warn)
//   CHORUS_TRACE_BUFFER calls each rank's flight recorder keeps per communicator (default 2048, scaled
//                      down for large teams; 0 turns recording off; at most env::kMaxTraceBuffer)
//   CHORUS_TRACE       path of a Chrome trace-event JSON file the host backend writes after each Team::run
//   CHORUS_TRACE_DUMP  directory where a rank that fails with a timeout or mismatch writes every rank's
//                      flight record as JSON
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config.hpp"
#include "error.hpp"

CHORUS_NAMESPACE_BEGIN

inline constexpr long kDefaultTimeoutMs = 30000;
inline constexpr long kDefaultKernelTimeoutMs = 600000;

enum class LogLevel { none = 0, warn = 1, info = 2, debug = 3 };

namespace env {

// Waits turn the timeout into a steady_clock deadline (int64 nanoseconds) and may wait twice it (the grace
// period), so an unbounded value would overflow into a deadline in the past and time out at once. Seven days
// is longer than any real wait, keeps 2 * max * 1e6 ns about 7600 times below int64's limit, and keeps
// 2 * max ms within a 32-bit long.
inline constexpr long kMaxTimeoutMs = 7L * 24 * 60 * 60 * 1000;
static_assert(2 * kMaxTimeoutMs <= 2147483647L, "twice the maximum timeout must fit a 32-bit long");

// A bounded recorder: a million calls of 64 bytes is 64 MiB per rank, already more than any
// post-mortem needs.
inline constexpr long kMaxTraceBuffer = 1L << 20;

// `text` as an integer in [min, max], else chorus::Error saying `what` the knob must be.
inline long parse_integer_knob(const char* name, const char* text, long min, long max, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    throw Error(ErrorCode::invalid_argument, detail::concat("chorus: ", name, " must be ", what, ", got '", text, "'"));
  }
  return value;
}

// A malformed knob is an error, not a silent default: a typo must not turn a 1 s timeout into 30 s.
inline long milliseconds_knob(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return parse_integer_knob(name, text, 1, kMaxTimeoutMs,
                            detail::concat("a positive integer of milliseconds, at most ", kMaxTimeoutMs, " (7 days)").c_str());
}

inline long timeout_ms() { return milliseconds_knob("CHORUS_TIMEOUT_MS", kDefaultTimeoutMs); }
inline long kernel_timeout_ms() { return milliseconds_knob("CHORUS_KERNEL_TIMEOUT_MS", kDefaultKernelTimeoutMs); }

// CHORUS_TRACE_BUFFER, or -1 when unset (the backend picks its default).
inline long trace_buffer() {
  const char* text = std::getenv("CHORUS_TRACE_BUFFER");
  if (text == nullptr || *text == '\0') return -1;
  return parse_integer_knob("CHORUS_TRACE_BUFFER", text, 0, kMaxTraceBuffer,
                            detail::concat("a number of calls from 0 (off) to ", kMaxTraceBuffer).c_str());
}

// CHORUS_TRACE and CHORUS_TRACE_DUMP: "" when unset.
inline std::string trace_path() {
  const char* text = std::getenv("CHORUS_TRACE");
  return text == nullptr ? std::string() : std::string(text);
}
inline std::string trace_dump_dir() {
  const char* text = std::getenv("CHORUS_TRACE_DUMP");
  return text == nullptr ? std::string() : std::string(text);
}

inline LogLevel log_level() {
  const char* text = std::getenv("CHORUS_LOG");
  if (text == nullptr || *text == '\0') return LogLevel::warn;
  if (std::strcmp(text, "none") == 0) return LogLevel::none;
  if (std::strcmp(text, "warn") == 0) return LogLevel::warn;
  if (std::strcmp(text, "info") == 0) return LogLevel::info;
  if (std::strcmp(text, "debug") == 0) return LogLevel::debug;
  throw Error(ErrorCode::invalid_argument,
              std::string("chorus: CHORUS_LOG must be none, warn, info or debug, got '") + text + "'");
}

}  // namespace env
CHORUS_NAMESPACE_END  // namespace chorus
