// The step interpreter's transport over MPI point-to-point (runtime/interpreter.hpp). Sends are
// MPI_Isend straight from the caller's buffer (no copy); receives land in staging buffers posted
// ahead of time, a window of them, so the next messages are already matched while this one is
// reduced: the chunks of a sliced schedule flow as a pipeline. All messages of one call carry the
// call's tag on the communicator's data channel, and MPI delivers messages between a pair in the
// order they were sent, which is the order the schedule pairs them in.
#pragma once

#include "mpi_header.hpp"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "../algo/schedule.hpp"
#include "../core/error.hpp"
#include "../runtime/interpreter.hpp"
#include "call_memory.hpp"
#include "endpoint.hpp"

namespace chorus::mpi::detail {

// MPI counts are int: larger steps travel as several messages of at most this many bytes.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;
// Receives posted ahead of the one being waited for.
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
  }

  const std::byte* receive(std::size_t index, const algo::Step& step, std::size_t bytes) {
    Posted& posted = posted_.front();
    if (posted.step != index || posted.staging.size() != bytes) {
      throw make_error(ErrorCode::internal, endpoint_.call(), endpoint_.name(), "step ", index,
                       " received out of schedule order");
    }
    statuses_.resize(posted.requests.size());
    endpoint_.wait(posted.requests.data(), static_cast<int>(posted.requests.size()),
                   [&] { return chorus::detail::concat("rank ", step.peer, "'s message for step ", index); },
                   statuses_.data());
    for (std::size_t i = 0, offset = 0; i < statuses_.size(); ++i, offset += kMaxMessageBytes) {
      int got = 0;
      MPI_Get_count(&statuses_[i], MPI_BYTE, &got);
      if (got != piece(bytes, offset)) {
        endpoint_.mismatched_message(chorus::detail::concat("rank ", step.peer, " sent ", got, " bytes for step ",
                                                            index, ", which expects ", piece(bytes, offset)));
      }
    }
    return posted.staging.data();
  }

  void received(std::size_t, const algo::Step&, std::size_t) {
    memory_.spare_staging.push_back(std::move(posted_.front().staging));
    posted_.pop_front();
    if (next_to_post_ < receive_steps_.size()) post_next();
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

 private:
  struct Posted {
    std::size_t step;
    std::vector<std::byte> staging;
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
    Posted posted{index, {}, {}};
    if (!memory_.spare_staging.empty()) {
      posted.staging = std::move(memory_.spare_staging.back());
      memory_.spare_staging.pop_back();
    }
    posted.staging.resize(bytes);
    posted_.push_back(std::move(posted));
    Posted& slot = posted_.back();
    for (std::size_t offset = 0, n = message_count(bytes); n > 0; --n, offset += kMaxMessageBytes) {
      MPI_Request request = MPI_REQUEST_NULL;
      check_mpi(MPI_Irecv(slot.staging.data() + offset, piece(bytes, offset), MPI_BYTE, step.peer,
                          endpoint_.data_tag(), endpoint_.data(), &request), endpoint_.call(), endpoint_.name(),
                "MPI_Irecv");
      slot.requests.push_back(request);
    }
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

  // After a failure: receives still posted are cancelled, their staging kept with the call memory
  // (which the failed communicator never frees); sends are left to complete on their own. The
  // family has been told (Endpoint::fail), so peers stop sending.
  void abandon() {
    for (Posted& posted : posted_) {
      for (MPI_Request& request : posted.requests) {
        if (request == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
      memory_.abandoned.push_back(std::move(posted.staging));
    }
    for (InFlight& send : sends_) {
      for (MPI_Request& request : send.requests) {
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
      }
    }
  }

  Endpoint& endpoint_;
  CallMemory& memory_;
  const std::vector<algo::Step>* steps_ = nullptr;
  std::size_t element_size_ = 1;
  std::vector<std::size_t> receive_steps_;
  std::size_t next_to_post_ = 0;
  std::deque<Posted> posted_;
  std::vector<InFlight> sends_;
  std::vector<MPI_Status> statuses_;
};

}  // namespace chorus::mpi::detail
