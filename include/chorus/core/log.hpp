// Minimal leveled logging to stderr, filtered by CHORUS_LOG. One line per call, written whole.
#pragma once

#include <cstdio>
#include <string>

#include "config.hpp"
#include "env.hpp"

CHORUS_NAMESPACE_BEGIN

template <class... Parts>
void log(LogLevel level, const Parts&... parts) {
  if (level == LogLevel::none || static_cast<int>(level) > static_cast<int>(env::log_level())) return;
  static const char* const kNames[] = {"", "WARN", "INFO", "DEBUG"};
  const std::string line = detail::concat("chorus ", kNames[static_cast<int>(level)], ": ", parts..., "\n");
  std::fputs(line.c_str(), stderr);
}

CHORUS_NAMESPACE_END  // namespace chorus
