// chorus::Error: the one exception type. Its message always names the call, the rank and the value.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace chorus {

enum class ErrorCode {
  invalid_argument,  // caught on the calling rank before any communication
  mismatch,          // ranks disagree on collective, count, type, op or root
  peer_failed,       // another rank threw or died; this rank was released
  timeout,           // a bounded wait ran out
  unsupported,       // valid request this build or backend cannot serve
  internal,          // a broken invariant inside chorus: a bug
};

inline const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::mismatch: return "rank mismatch";
    case ErrorCode::peer_failed: return "peer failed";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::internal: return "internal error";
  }
  return "unknown error";
}

class Error : public std::exception {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  ErrorCode code_;
  std::string message_;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

// Builds "chorus::<call> on rank <r>: <details...>" so every message has the same shape.
template <class... Parts>
Error make_error(ErrorCode code, const char* call, int rank, const Parts&... details) {
  return Error(code, detail::concat("chorus::", call, " on rank ", rank, ": ", details...));
}

}  // namespace chorus
