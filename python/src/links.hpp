// Point-to-point over links: a link is one direction of messages between this rank and one peer, with
// its own thread and its own 2-rank communicator (the sender is its rank 0, the receiver its rank 1).
// chorus's send returns when the receiver has taken the message and a communicator serves one thread,
// so on the group's one worker an isend blocks the irecv queued behind it. On a link a send waits
// only for the receive it is matched with, and never for another pair's traffic or a collective, so
// isend/irecv issued in any order complete once each is matched (as on gloo); each pair's messages
// stay in issue order (one thread and one FIFO per direction).
#pragma once

#include <chorus/core/error.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "transport.hpp"
#include "worker.hpp"

namespace chorus_torch {

// How a transport makes links; empty where it has none (mpi: point-to-point stays on the group's worker).
struct LinkFactory {
  // A link's communicator: collective with the peer's end of the link, so it runs on the link's thread
  // at its first message and waits, within `timeout_ms`, for the peer's first message in that
  // direction; it gives up when `aborted()` says so or when any rank of the group has announced an abort.
  std::function<std::unique_ptr<Transport>(int peer, bool sends, long timeout_ms, const std::function<bool()>& aborted)>
      make;
  // Announces this rank's abort to every rank's links still being made (a made link is interrupted).
  std::function<void(const std::string& why)> announce_abort;
  explicit operator bool() const { return static_cast<bool>(make); }
};

class Link {
 public:
  Link(LinkFactory make, int peer, bool sends) : make_(std::move(make)), peer_(peer), sends_(sends) {}
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;
  ~Link() { worker_.stop(); }

  int peer() const { return peer_; }
  bool sends() const { return sends_; }
  // The peer's rank in the link's communicator.
  int peer_in_link() const { return sends_ ? 1 : 0; }
  // The link rank numbers an error from the link's communicator uses, in the group's ranks.
  std::string legend(int me) const {
    return "link rank 0 is rank " + std::to_string(sends_ ? me : peer_) + ", link rank 1 is rank " +
           std::to_string(sends_ ? peer_ : me);
  }

  void post(Worker::Job job) { worker_.post(std::move(job)); }

  // On the link's thread: the communicator, made at the first message. Throws chorus::Error.
  Transport& comm(long timeout_ms) {
    if (!comm_) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!why_.empty()) refuse_aborted();
      }
      std::unique_ptr<Transport> made = make_.make(peer_, sends_, timeout_ms, [this] {
        std::lock_guard<std::mutex> lock(mutex_);
        return !why_.empty();
      });
      std::lock_guard<std::mutex> lock(mutex_);
      comm_ = std::move(made);
      if (!why_.empty()) comm_->interrupt(why_);  // abort() came while the communicator was being made
    }
    return *comm_;
  }

  // From any thread: fails the link so both ends' current and later messages throw, naming `why`.
  void interrupt(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    why_ = why;
    if (comm_) comm_->interrupt(why);
  }

  // Runs what is queued (failing fast once interrupted), then ends the thread. Idempotent.
  void stop() { worker_.stop(); }

 private:
  [[noreturn]] void refuse_aborted() const {
    throw chorus::Error(chorus::ErrorCode::peer_failed, "the process group was aborted before this link was made: " + why_);
  }

  LinkFactory make_;
  int peer_;
  bool sends_;
  std::mutex mutex_;  // comm_ (written by the link's thread, read by interrupt) and why_
  std::unique_ptr<Transport> comm_;
  std::string why_;
  Worker worker_;  // last: its thread stops before the communicator goes
};

}  // namespace chorus_torch
