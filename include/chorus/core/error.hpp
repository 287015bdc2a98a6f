// chorus::Error: the one exception type. Its message always names the call, the rank and the value.
#pragma once

#include <exception>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>

#include "config.hpp"

CHORUS_NAMESPACE_BEGIN

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

// Who made a call: the rank in its communicator and, for a communicator split from a team, the
// rank in the team too, since "rank 0" of a sub-communicator is some other rank of the program.
struct RankName {
  int rank;
  int team_rank = -1;  // -1: the same as rank (or no team)
  RankName(int rank_in_comm) : rank(rank_in_comm) {}  // NOLINT: implicit, ranks are plain ints
  RankName(int rank_in_comm, int rank_in_team) : rank(rank_in_comm), team_rank(rank_in_team) {}
};

inline std::ostream& operator<<(std::ostream& out, const RankName& name) {
  out << name.rank;
  if (name.team_rank >= 0) out << " (team rank " << name.team_rank << ")";
  return out;
}

// Builds "chorus::<call> on rank <r>: <details...>" so every message has the same shape; a rank of
// a split communicator reads "rank 0 (team rank 3)".
template <class... Parts>
Error make_error(ErrorCode code, const char* call, RankName rank, const Parts&... details) {
  return Error(code, detail::concat("chorus::", call, " on rank ", rank, ": ", details...));
}

CHORUS_NAMESPACE_END  // namespace chorus
