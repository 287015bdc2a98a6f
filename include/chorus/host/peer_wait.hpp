// The one bounded wait of the host backend, for collectives and point-to-point alike: wait until
// `ready()` while another rank's thread makes progress. Between polls it leaves early when the
// team aborted (released: another rank failed first), runs the caller's check (e.g. compare the
// peer's call descriptor: a mismatched peer may never produce what we wait for), and fails when
// the peer has returned from its function (it never will). Past the deadline it fails with a
// timeout naming whom this rank waited for and where, unless the peer itself waits for a third
// rank: then the peer reports (its message names the rank really missing) and this rank waits once more.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../runtime/flight_record_json.hpp"
#include "shared_state.hpp"
#include "../runtime/wait.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

// One rank inside one call: who fails, and how, when a wait goes wrong.
class PeerWaiter {
 public:
  PeerWaiter(const SharedState& state, const char* call, int rank, long timeout_ms)
      : state_(state), call_(call), rank_(rank), timeout_ms_(timeout_ms) {}

  const char* call() const { return call_; }
  int rank() const { return rank_; }

  // The error of a rank released by another's failure.
  Released released() const {
    return state_.fault().released(call_, state_.name(rank_), state_.is_team() ? "rank " : "team rank ");
  }
  void throw_if_aborted() const {
    if (state_.fault().aborted()) throw released();
  }

  // Fails the call on this rank: releases every other rank of the team with the same code and
  // returns the error to throw (so a caller can publish a last word to its peer first). A timeout or
  // mismatch says, from every rank's flight recorder, who is behind and where the ranks split, and
  // dumps the records under CHORUS_TRACE_DUMP.
  Error failure(ErrorCode code, const std::string& what) const {
    std::string message = what;
    if (code == ErrorCode::timeout || code == ErrorCode::mismatch) message += explain_desync(code);
    Error error = make_error(code, call_, state_.name(rank_), message);
    state_.fault().abort(state_.team_rank(rank_), code, error.what());
    return error;
  }
  [[noreturn]] void fail(ErrorCode code, const std::string& what) const { throw failure(code, what); }

  // `check()` runs between polls and may throw; `describe()` says what this rank was doing, for
  // the timeout and peer-exit messages ("at step 3 (...), waiting for rank 2 to ...").
  template <class Ready, class Check, class Describe>
  void wait(int peer, Ready&& ready, Check&& check, Describe&& describe) const {
    WaitingMark mark(state_, rank_, peer);
    runtime::wait_until(
        timeout_ms_, state_.yields(), ready,
        [&] {
          mark.set();
          throw_if_aborted();
          check();
          if (state_.fault().exited(state_.team_rank(peer)) && !ready()) {
            fail(ErrorCode::mismatch,
                 chorus::detail::concat("rank ", peer, " returned from its function while this rank was ", describe()));
          }
        },
        [&]() -> long {
          if (mark.grace()) return timeout_ms_;
          fail(ErrorCode::timeout,
               chorus::detail::concat("timed out after ", mark.waited_ms(timeout_ms_), " ms ", describe()));
        },
        state_.max_sleep());
  }

 private:
  std::string explain_desync(ErrorCode code) const {
    try {
      std::vector<runtime::RankRecord> records = state_.flight_records();
      // A mismatch is found as soon as two ranks enter the call; the others are likely on their way
      // (the team is not aborted yet), and the summary is clearer with their records in it.
      if (code == ErrorCode::mismatch) records = settled_records(std::move(records));
      const std::string dir = env::trace_dump_dir();
      std::string dumped;
      if (!dir.empty()) {
        const std::string path = runtime::dump_path(dir, chorus::detail::concat("comm", state_.id()), rank_);
        try {
          runtime::dump_flight_record(path, records, state_.dump_origin(), call_, state_.name(rank_));
          dumped = chorus::detail::concat("\n  every rank's record: ", path);
        } catch (const Error& e) {
          log(LogLevel::warn, e.what());
        }
      }
      return "\n" + runtime::desync_summary(records) + dumped;
    } catch (const std::exception&) {  // no memory for the explanation: the error itself matters more
      return {};
    }
  }

  std::vector<runtime::RankRecord> settled_records(std::vector<runtime::RankRecord> records) const {
    constexpr auto kPatience = std::chrono::milliseconds(100);
    const auto reached = [](const runtime::RankRecord& r) { return r.calls.empty() ? 0 : r.calls.back().sequence; };
    const std::uint64_t mine = reached(records[static_cast<std::size_t>(rank_)]);
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    for (;;) {
      bool settled = true;
      for (const runtime::RankRecord& r : records) settled = settled && (r.returned || reached(r) >= mine);
      if (settled || std::chrono::steady_clock::now() >= deadline) return records;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      records = state_.flight_records();
    }
  }

  const SharedState& state_;
  const char* call_;
  int rank_;
  long timeout_ms_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
