// How a failed process releases its peers. A communicator and every communicator split from it
// share one fault channel (a communicator of their own over the original group). The first failure
// a rank sees mid-call (timeout, mismatch, MPI error) is sent to every other rank of the channel,
// and every wait polls the channel, so the others stop waiting at once with an error naming the
// cause instead of running into their own timeouts. As in the host backend, a released rank's error
// reads "released because rank R failed: <R's error>" and has R's code when that was mismatch or
// timeout (the whole call failed for that reason), peer_failed otherwise. A channel that has failed
// stays failed: the collectives in flight were abandoned half-way, so no later call can be trusted.
// Communicators of one family may be used from different threads (a gradient reducer's thread on
// the data-parallel one, the caller on another), so the channel's state is behind a mutex.
#pragma once

#include "mpi_header.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

inline constexpr int kAbortTag = 2;

// MPI_Comm_free, unless MPI is already gone (a communicator outliving MPI_Finalize).
inline void free_comm(MPI_Comm& comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

class FaultChannel {
 public:
  // Takes ownership of `comm` (a private duplicate).
  explicit FaultChannel(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  FaultChannel(const FaultChannel&) = delete;
  FaultChannel& operator=(const FaultChannel&) = delete;
  // A failed channel may still have failure reports in flight to it; freeing the communicator would
  // let MPI reuse its context for a new communicator, where a stale report could be matched. So a
  // failed family's communicators are never freed (a few handles, once per failure).
  ~FaultChannel() {
    if (!failed()) free_comm(comm_);
  }

  bool failed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
  }

  // This rank's number on the channel (the rank in the communicator everything was split from).
  int rank() const { return rank_; }

  // Records the failure and sends it to every other rank; only the first is kept and sent.
  void raise(ErrorCode code, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return;
    failed_ = true;
    code_ = released_code(code);
    reason_ = "an earlier call on this rank failed: " + reason;
    outgoing_[0] = static_cast<char>(code);
    const std::size_t length = std::min(reason.size(), outgoing_.size() - 2);
    std::copy(reason.begin(), reason.begin() + static_cast<std::ptrdiff_t>(length), outgoing_.begin() + 1);
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      // Fire and forget: the message is far below every eager limit, and outgoing_ outlives it.
      MPI_Request request = MPI_REQUEST_NULL;
      if (MPI_Isend(outgoing_.data(), static_cast<int>(outgoing_.size()), MPI_CHAR, peer, kAbortTag, comm_,
                    &request) == MPI_SUCCESS) {
        MPI_Request_free(&request);
      }
    }
  }

  // Throws if the channel failed here earlier or a peer's failure has arrived.
  void poll(const char* call, RankName rank) {
    ErrorCode code = ErrorCode::peer_failed;
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failed_) receive_report();
      if (!failed_) return;
      code = code_;
      reason = reason_;
    }
    throw make_error(code, call, rank, reason);
  }

 private:
  static constexpr std::size_t kReasonBytes = 512;

  // A matched probe (MPI_Improbe + MPI_Mrecv), so no other thread can take the report in between.
  void receive_report() {
    int arrived = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, kAbortTag, comm_, &arrived, &message, &status) != MPI_SUCCESS || !arrived) return;
    std::array<char, kReasonBytes> incoming{};
    MPI_Mrecv(incoming.data(), static_cast<int>(incoming.size()), MPI_CHAR, &message, MPI_STATUS_IGNORE);
    incoming.back() = '\0';
    failed_ = true;
    code_ = released_code(static_cast<ErrorCode>(incoming[0]));
    reason_ = chorus::detail::concat("released because rank ", status.MPI_SOURCE, " failed: ", incoming.data() + 1);
  }

  static ErrorCode released_code(ErrorCode cause) {
    return cause == ErrorCode::mismatch || cause == ErrorCode::timeout ? cause : ErrorCode::peer_failed;
  }

  mutable std::mutex mutex_;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  bool failed_ = false;
  ErrorCode code_ = ErrorCode::peer_failed;  // what this rank's calls throw once failed
  std::string reason_;
  std::array<char, kReasonBytes> outgoing_{};
};

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
