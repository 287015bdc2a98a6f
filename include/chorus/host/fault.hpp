// The team-wide failure state every wait observes: an abort flag with the rank that failed first
// and why, and which ranks have left Team::run's function. Sub-communicators share their team's
// Fault, so a failure anywhere releases waiters everywhere.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

// What a rank throws when it is released because another rank failed. Team::run tells these
// apart from original failures so it rethrows the cause, not a consequence.
class Released : public Error {
 public:
  using Error::Error;
};

class Fault {
 public:
  explicit Fault(int size)
      : size_(size),
        exited_(new std::atomic<bool>[static_cast<std::size_t>(size)]),
        waiting_(new Waiting[static_cast<std::size_t>(size)]) {
    reset();
  }

  // Only between runs: no rank thread is alive.
  void reset() {
    aborted_.store(false, std::memory_order_relaxed);
    cause_ = -1;
    code_ = ErrorCode::internal;
    reason_.clear();
    for (int r = 0; r < size_; ++r) {
      exited_[r].store(false, std::memory_order_relaxed);
      waiting_[r].value.store(-1, std::memory_order_relaxed);
    }
  }

  int size() const { return size_; }

  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Sequentially consistent, for the reader/withdraw handshake (see RankSlot::reading).
  bool aborted_strict() const { return aborted_.load(std::memory_order_seq_cst); }

  // The first abort wins and is the one reported; returns whether this call was it.
  bool abort(int team_rank, ErrorCode code, std::string reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load(std::memory_order_relaxed)) return false;
    cause_ = team_rank;
    code_ = code;
    reason_ = std::move(reason);
    aborted_.store(true, std::memory_order_seq_cst);
    return true;
  }

  int cause() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cause_;
  }

  // The error a released rank throws. Ranks caught up in a mismatch or a timeout get that code
  // (the whole call failed that way); any other failure is a peer failure.
  Released released(const char* call, RankName rank, const char* rank_kind) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const ErrorCode code =
        code_ == ErrorCode::mismatch || code_ == ErrorCode::timeout ? code_ : ErrorCode::peer_failed;
    return Released(code, chorus::detail::concat("chorus::", call, " on rank ", rank, ": released because ", rank_kind,
                                                 cause_, " failed: ", reason_));
  }

  // Whom a rank is blocked on (team ranks; -1: nobody). Only a hint for choosing which rank
  // reports a timeout, so relaxed.
  void set_waiting(int team_rank, int awaited) { waiting_[team_rank].value.store(awaited, std::memory_order_relaxed); }
  int waiting(int team_rank) const { return waiting_[team_rank].value.load(std::memory_order_relaxed); }

  void mark_exited(int team_rank) { exited_[team_rank].store(true, std::memory_order_release); }
  bool exited(int team_rank) const { return exited_[team_rank].load(std::memory_order_acquire); }

 private:
  struct alignas(64) Waiting {  // one line per rank: set on every slow wait
    std::atomic<int> value{-1};
  };

  int size_;
  std::unique_ptr<std::atomic<bool>[]> exited_;
  std::unique_ptr<Waiting[]> waiting_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex mutex_;
  int cause_ = -1;
  ErrorCode code_ = ErrorCode::internal;
  std::string reason_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
