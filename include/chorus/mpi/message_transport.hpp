// The step interpreter's transport over MPI point-to-point (runtime/interpreter.hpp). Sends are
// MPI_Isend straight from the caller's buffer (no copy). Receives land in chorus-owned staging, a
// window of steps ahead of the one being reduced, so the chunks of a sliced schedule flow as a
// pipeline. All messages of one call carry the call's tag on the communicator's data channel, and
// MPI delivers messages between a pair in the order they were sent, which is the order the
// schedule pairs them in.
//
// A receive is never posted before its message's size is known: the transport matches each message
// with MPI_Improbe, and only a message of exactly the step's size is received (MPI_Imrecv) into the
// step's staging. Ranks that disagree on the call (another algorithm, count, collective) send
// messages of other sizes; Open MPI 4.1's shared-memory single-copy path would write such a larger
// message past a smaller posted receive instead of reporting truncation. A message of the wrong size
// is received whole into a chorus-owned buffer of its own size, and the call fails with mismatch.
//
// After a failure (drain()), the rank tells its peers first (Endpoint::fail), then, bounded by
// CHORUS_TIMEOUT_MS, completes every receive it has matched and takes every message its peers sent
// for the call into chorus-owned buffers, until its own sends have completed: a peer's send
// completes when it has been received, so once every rank has drained, MPI holds no reference to a
// caller's buffer and the caller may free it. Messages never matched are never matched later (no
// rank receives on a failed communicator again).
#pragma once

#include "mpi_header.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../runtime/interpreter.hpp"
#include "call_memory.hpp"
#include "endpoint.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

// MPI counts are int: larger steps travel as several messages of at most this many bytes.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;
// Receive steps matched ahead of the one being waited for.
inline constexpr std::size_t kReceiveWindow = 8;
// Sends remembered before delivered ones are dropped.
inline constexpr std::size_t kTrimAbove = 64;

inline std::size_t message_count(std::size_t bytes) {
  return bytes == 0 ? 1 : (bytes + kMaxMessageBytes - 1) / kMaxMessageBytes;
}

class MessageTransport {
 public:
  explicit MessageTransport(Endpoint& endpoint) : endpoint_(endpoint), memory_(endpoint.memory()) {}
  MessageTransport(const MessageTransport&) = delete;
  MessageTransport& operator=(const MessageTransport&) = delete;
  ~MessageTransport() { abandon(); }

  runtime::Buffers attach(const algo::Schedule& schedule, runtime::Buffers caller, std::size_t element_size) {
    steps_ = &schedule.steps[static_cast<std::size_t>(endpoint_.rank())];
    element_size_ = element_size;
    memory_.scratch.resize(schedule.scratch_count * element_size);
    caller.scratch = memory_.scratch.empty() ? nullptr : memory_.scratch.data();
    for (std::size_t i = 0; i < steps_->size(); ++i) {
      const algo::Op op = (*steps_)[i].op;
      if (op == algo::Op::recv_copy || op == algo::Op::recv_reduce) receive_steps_.push_back(i);
    }
    while (posted_.size() < kReceiveWindow && next_to_post_ < receive_steps_.size()) post_next();
    match_arrived();
    return caller;
  }

  void send(std::size_t, const algo::Step& step, const std::byte* src, std::size_t bytes) {
    sends_.push_back(InFlight{src, bytes, {}});
    InFlight& send = sends_.back();
    for (std::size_t offset = 0, n = message_count(bytes); n > 0; --n, offset += kMaxMessageBytes) {
      MPI_Request request = MPI_REQUEST_NULL;
      check_mpi(MPI_Isend(src + offset, piece(bytes, offset), MPI_BYTE, step.peer, endpoint_.data_tag(),
                          endpoint_.data(), &request), endpoint_.call(), endpoint_.name(), "MPI_Isend");
      send.requests.push_back(request);
    }
    match_arrived();
  }

  const std::byte* receive(std::size_t index, const algo::Step& step, std::size_t bytes) {
    Posted& posted = posted_.front();
    if (posted.step != index || posted.staging.size() != bytes) {
      throw make_error(ErrorCode::internal, endpoint_.call(), endpoint_.name(), "step ", index,
                       " received out of schedule order");
    }
    endpoint_.wait_for(
        [&] {
          match_arrived();
          if (posted.matched < posted.requests.size()) return false;
          int done = 0;
          check_mpi(MPI_Testall(static_cast<int>(posted.requests.size()), posted.requests.data(), &done,
                                MPI_STATUSES_IGNORE), endpoint_.call(), endpoint_.name(), "MPI_Testall");
          return done != 0;
        },
        [&] { return chorus::detail::concat("rank ", step.peer, "'s message for step ", index); });
    return posted.staging.data();
  }

  void received(std::size_t, const algo::Step&, std::size_t) {
    memory_.spare_staging.push_back(std::move(posted_.front().staging));
    posted_.pop_front();
    if (next_to_post_ < receive_steps_.size()) post_next();
    match_arrived();
  }

  // The interpreter is about to write [dst, dst + bytes): sends still reading it must finish first.
  void before_write(std::size_t, std::byte* dst, std::size_t bytes) {
    if (sends_.size() > kTrimAbove) forget_delivered();
    for (InFlight& send : sends_) {
      const bool overlaps = send.bytes > 0 && bytes > 0 && send.src < dst + bytes && dst < send.src + send.bytes;
      if (overlaps && !send.requests.empty()) wait_for(send);
    }
  }

  // Every send delivered; the descriptor check is the endpoint's.
  void finish() {
    for (InFlight& send : sends_) wait_for(send);
    sends_.clear();
  }

  // After a failure, once the peers have been told: see the top of this file. Never throws.
  void drain() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(endpoint_.timeout_ms());
    // Joined once this rank's own messages are done; complete once every rank's are, so no rank stops
    // taking messages while a peer still has one for it (a nonblocking consensus, as in NBX).
    MPI_Request* everyone = nullptr;
    for (;;) {
      // Every message of this call that reaches this rank, whatever its size, into a buffer of that size.
      for (int more = 1; more;) {
        MPI_Message message = MPI_MESSAGE_NULL;
        MPI_Status status;
        if (MPI_Improbe(MPI_ANY_SOURCE, endpoint_.data_tag(), endpoint_.data(), &more, &message, &status) !=
            MPI_SUCCESS) {
          break;
        }
        if (more) take_whole(message, status);
      }
      bool quiet = true;
      for (Posted& posted : posted_) quiet = complete(posted.requests) && quiet;
      for (Taken& taken : taken_) quiet = complete(taken.requests) && quiet;
      for (InFlight& send : sends_) quiet = complete(send.requests) && quiet;
      if (quiet) {
        if (everyone == nullptr) everyone = endpoint_.drain_barrier();
        int done = 0;
        if (*everyone == MPI_REQUEST_NULL || MPI_Test(everyone, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  struct Posted {
    std::size_t step;
    int peer;
    std::vector<std::byte> staging;
    std::vector<MPI_Request> requests;  // one per message (piece); MPI_REQUEST_NULL until matched
    std::size_t matched = 0;            // pieces matched and received into staging so far
  };
  // A message of the wrong size, or one drained after a failure: received whole, then dropped.
  struct Taken {
    std::vector<std::byte> bytes;
    std::vector<MPI_Request> requests;
  };
  struct InFlight {
    const std::byte* src;
    std::size_t bytes;
    std::vector<MPI_Request> requests;  // empty once delivered
  };

  static int piece(std::size_t bytes, std::size_t offset) {
    return static_cast<int>(std::min(kMaxMessageBytes, bytes - std::min(bytes, offset)));
  }

  void post_next() {
    const std::size_t index = receive_steps_[next_to_post_++];
    const algo::Step& step = (*steps_)[index];
    const std::size_t bytes = step.count * element_size_;
    Posted posted{index, step.peer, {}, {}};
    if (!memory_.spare_staging.empty()) {
      posted.staging = std::move(memory_.spare_staging.back());
      memory_.spare_staging.pop_back();
    }
    posted.staging.resize(bytes);
    posted.requests.assign(message_count(bytes), MPI_REQUEST_NULL);
    posted_.push_back(std::move(posted));
  }

  // Matches, in schedule order per peer, the window's messages that have arrived, and receives each
  // into its step's staging once its size is known to be the step's.
  void match_arrived() {
    blocked_.clear();  // peers with an earlier step still unmatched: their later messages must wait
    for (Posted& posted : posted_) {
      if (posted.matched == posted.requests.size()) continue;
      if (std::find(blocked_.begin(), blocked_.end(), posted.peer) != blocked_.end()) continue;
      const std::size_t bytes = posted.staging.size();
      while (posted.matched < posted.requests.size()) {
        int arrived = 0;
        MPI_Message message = MPI_MESSAGE_NULL;
        MPI_Status status;
        check_mpi(MPI_Improbe(posted.peer, endpoint_.data_tag(), endpoint_.data(), &arrived, &message, &status),
                  endpoint_.call(), endpoint_.name(), "MPI_Improbe");
        if (!arrived) break;
        const std::size_t offset = posted.matched * kMaxMessageBytes;
        int got = 0;
        MPI_Get_count(&status, MPI_BYTE, &got);
        if (got != piece(bytes, offset)) {
          take_whole(message, status);  // the sender's request completes; nothing lands in staging
          endpoint_.mismatched_message(chorus::detail::concat("rank ", posted.peer, " sent ", got,
                                                              " bytes for step ", posted.step, ", which expects ",
                                                              piece(bytes, offset)));
        }
        check_mpi(MPI_Imrecv(posted.staging.data() + offset, got, MPI_BYTE, &message,
                             &posted.requests[posted.matched]),
                  endpoint_.call(), endpoint_.name(), "MPI_Imrecv");
        ++posted.matched;
      }
      if (posted.matched < posted.requests.size()) blocked_.push_back(posted.peer);
    }
  }

  // Receives a matched message whole into a chorus-owned buffer of its own size. Never throws.
  void take_whole(MPI_Message& message, const MPI_Status& status) {
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    taken_.push_back(Taken{std::vector<std::byte>(static_cast<std::size_t>(std::max(got, 1))), {MPI_REQUEST_NULL}});
    Taken& taken = taken_.back();
    if (MPI_Imrecv(taken.bytes.data(), got, MPI_BYTE, &message, &taken.requests[0]) != MPI_SUCCESS) {
      taken.requests[0] = MPI_REQUEST_NULL;
    }
  }

  // Tests requests without throwing; true once every one has completed (or was never posted).
  static bool complete(std::vector<MPI_Request>& requests) {
    if (requests.empty()) return true;
    int done = 0;
    if (MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
      return false;
    }
    return done != 0;
  }

  // Drops sends already delivered, so a call of many slices does not scan them all at every write.
  void forget_delivered() {
    for (InFlight& send : sends_) {
      if (send.requests.empty()) continue;
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(send.requests.size()), send.requests.data(), &done, MPI_STATUSES_IGNORE),
                endpoint_.call(), endpoint_.name(), "MPI_Testall");
      if (done) send.requests.clear();
    }
    sends_.erase(std::remove_if(sends_.begin(), sends_.end(), [](const InFlight& s) { return s.requests.empty(); }),
                 sends_.end());
  }

  void wait_for(InFlight& send) {
    if (send.requests.empty()) return;
    endpoint_.wait(send.requests.data(), static_cast<int>(send.requests.size()),
                   [] { return std::string("a peer to take this rank's message"); });
    send.requests.clear();
  }

  // Whatever is still outstanding when the transport ends early (drained or not): receives already
  // matched and taken messages keep writing into chorus-owned buffers, which are handed to the call
  // memory (never freed by a failed communicator); requests are released, not cancelled (a matched
  // receive cannot be). Without a drain (an exception other than chorus::Error), sends may still
  // read the caller's buffers: docs/mpi.md, "After a failure".
  void abandon() {
    const auto release = [](std::vector<MPI_Request>& requests) {
      for (MPI_Request& request : requests) {
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
      }
    };
    for (Posted& posted : posted_) {
      release(posted.requests);
      memory_.abandoned.push_back(std::move(posted.staging));
    }
    for (Taken& taken : taken_) {
      release(taken.requests);
      memory_.abandoned.push_back(std::move(taken.bytes));
    }
    for (InFlight& send : sends_) release(send.requests);
  }

  Endpoint& endpoint_;
  CallMemory& memory_;
  const std::vector<algo::Step>* steps_ = nullptr;
  std::size_t element_size_ = 1;
  std::vector<std::size_t> receive_steps_;
  std::size_t next_to_post_ = 0;
  std::deque<Posted> posted_;
  std::vector<Taken> taken_;
  std::vector<int> blocked_;
  std::vector<InFlight> sends_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
