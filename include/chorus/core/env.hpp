// Environment knobs. Read on every call (cheap: a getenv) so tests and tools can change them at run time.
//   CHORUS_TIMEOUT_MS  bound on every wait, in milliseconds (default 30000; must be a positive integer)
//   CHORUS_LOG         none | warn | info | debug  (default warn)
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "error.hpp"

namespace chorus {

inline constexpr long kDefaultTimeoutMs = 30000;

enum class LogLevel { none = 0, warn = 1, info = 2, debug = 3 };

namespace env {

// A malformed knob is an error, not a silent default: a typo must not turn a 1 s timeout into 30 s.
inline long timeout_ms() {
  const char* text = std::getenv("CHORUS_TIMEOUT_MS");
  if (text == nullptr || *text == '\0') return kDefaultTimeoutMs;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value <= 0) {
    throw Error(ErrorCode::invalid_argument,
                std::string("chorus: CHORUS_TIMEOUT_MS must be a positive integer of milliseconds, got '") +
                    text + "'");
  }
  return value;
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
}  // namespace chorus
