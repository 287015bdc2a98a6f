// One rank's end of an MPI-backed communicator: the private MPI communicators it talks over, the
// per-call agreement check, and the bounded wait every MPI request goes through.
//
// Three duplicates of the caller's communicator keep traffic apart: `data` carries collectives
// (tagged by call sequence number, so a rank that skipped a call never has its bytes matched to
// another call), `control` carries call descriptors, `p2p` carries send/recv. Each call sends its
// descriptor (runtime/call_descriptor.hpp, with the sequence number) to the next rank of the ring
// and receives the previous rank's: if every neighbour pair agrees, all ranks agree, at the cost of
// one small message per call that overlaps the data movement. Waits poll that check, so a mismatch
// is reported as soon as the neighbour's descriptor arrives, even while data is still awaited.
#pragma once

#include "mpi_header.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/flight_recorder.hpp"
#include "../runtime/wait.hpp"
#include "../runtime/wire_call.hpp"
#include "call_memory.hpp"
#include "check.hpp"
#include "failure_record.hpp"
#include "fault_channel.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

inline constexpr int kDescriptorTag = 1;

using runtime::from_wire;
using runtime::to_wire;
using runtime::WireCall;

// Duplicates `comm` with errors returned as codes (check.hpp turns them into chorus::Error).
inline MPI_Comm duplicate(MPI_Comm comm, const char* call) {
  MPI_Comm copy = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &copy), call, -1, "MPI_Comm_dup");
  MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
  return copy;
}

class Endpoint {
 public:
  // `family`: the fault channel of the communicator this one was split from (null: start a family).
  Endpoint(MPI_Comm comm, std::shared_ptr<FaultChannel> family, const char* call) : fault_(std::move(family)) {
    // First: a malformed knob throws before any MPI object exists. One rank per process, so the
    // largest CHORUS_TRACE_BUFFER (env::kMaxTraceBuffer, 64 MiB) already fits the host backend's budget.
    try {
      const long calls = env::trace_buffer();
      recorder_.set_capacity(calls >= 0 ? static_cast<std::size_t>(calls) : runtime::FlightRecorder::kDefaultCapacity);
      log_level_ = env::log_level();
    } catch (const Error& e) {
      throw Error(e.code(), chorus::detail::concat("chorus::", call, ": ", e.what()));
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::", call, ": MPI is not initialised; create a chorus::mpi::Session "
                                         "first (or call MPI_Init_thread)"));
    }
    if (comm == MPI_COMM_NULL) {
      throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::", call, ": MPI_COMM_NULL given"));
    }
    data_ = duplicate(comm, call);
    control_ = duplicate(comm, call);
    p2p_ = duplicate(comm, call);
    MPI_Comm_rank(data_, &rank_);
    MPI_Comm_size(data_, &size_);
    comm_name_ = name_communicator(data_, rank_, call);
    if (!fault_) fault_ = std::make_shared<FaultChannel>(duplicate(comm, call));
    // Ranks sharing this node decide how waits back off (runtime/wait.hpp): more processes than
    // cores must sleep early or they starve the process being waited for.
    MPI_Comm node = MPI_COMM_NULL;
    int node_ranks = 1;
    if (MPI_Comm_split_type(data_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_size(node, &node_ranks);
      free_comm(node);
    }
    yields_ = runtime::WaitPolicy::yields(node_ranks);
    max_sleep_ = runtime::WaitPolicy::max_sleep(node_ranks);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  // After a failure, messages of the abandoned call may still be unmatched and MPI may still touch
  // the call's memory: the communicators are kept (not freed, so MPI never gives their contexts
  // to a new communicator) and the call memory is leaked, both on purpose.
  ~Endpoint() {
    if (fault_->failed()) {
      static_cast<void>(memory_.release());
      return;
    }
    free_comm(data_);
    free_comm(control_);
    free_comm(p2p_);
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "rank 1", or "rank 1 (team rank 5)" in a communicator split from another.
  RankName name() const { return fault_->rank() == rank_ ? RankName(rank_) : RankName(rank_, fault_->rank()); }
  MPI_Comm data() const { return data_; }
  MPI_Comm p2p() const { return p2p_; }
  const std::shared_ptr<FaultChannel>& fault() const { return fault_; }
  // The tag of the current collective's data messages (MPI guarantees tags up to 32767).
  int data_tag() const { return static_cast<int>(sequence_ & 0x7fff); }
  const char* call() const { return call_; }
  CallMemory& memory() { return *memory_; }
  // This rank's last calls (docs/debugging.md); only this process's rank: ranks do not share memory.
  runtime::FlightRecorder& recorder() { return recorder_; }
  const runtime::FlightRecorder& recorder() const { return recorder_; }
  // This communicator's name in dumps, the same on every rank (failure_record.hpp).
  const CommName& comm_name() const { return comm_name_; }
  // CHORUS_LOG as read when this communicator was created.
  LogLevel log_level() const { return log_level_; }
  // CHORUS_TIMEOUT_MS as read when the current call started.
  long timeout_ms() const { return timeout_ms_; }

  // After a failure of mpi::Comm: this rank's part in the consensus that ends the drain
  // (message_transport.hpp), posted once per communicator on the data channel, which carries no other
  // collective then. Never freed (MPI does not let a nonblocking collective be), like the channel.
  MPI_Request* drain_barrier() {
    if (!drain_posted_) {
      drain_posted_ = true;
      if (MPI_Ibarrier(data_, &drain_) != MPI_SUCCESS) drain_ = MPI_REQUEST_NULL;
    }
    return &drain_;
  }

  // A failed call's error with this rank's own last calls, dumped under CHORUS_TRACE_DUMP (once).
  Error explained(const Error& error) {
    return with_own_record(error, recorder_, rank_, size_, comm_name_, call_, name(), dumped_);
  }

  // Starts a call that exchanges no descriptor (send, recv): fails now if the family has failed.
  void start(const char* call) {
    enter(call);
    try {
      fault_->poll(call_, name());
    } catch (const Error& e) {  // released before the call started: where this rank was is still news
      throw explained(e);
    }
  }

  // Starts a collective call: posts this rank's descriptor to the next rank, the receive of the
  // previous rank's, and this rank's vote. finish() completes both checks; every wait polls them.
  void begin(const char* call, const runtime::CallDescriptor& descriptor) {
    enter(call);
    ++sequence_;
    mine_ = descriptor;
    // Recorded before the family is polled: a rank released as it enters the call has still made it
    // (its record shows which call it was making when the others had failed).
    recorder_.post(sequence_, descriptor);
    try {
      fault_->poll(call_, name());
    } catch (const Error& e) {
      recorder_.end(runtime::CallState::failed);
      throw explained(e);
    }
    collective_ = true;
    checked_ = size_ == 1;
    // With two ranks the neighbour check is already every rank's check: no vote.
    voted_ = evaluated_ = size_ <= 2;
    if (checked_) return;
    try {
      post_checks(descriptor);
    } catch (const Error& e) {  // the call failed before its first wait: recorded failed, peers released
      recorder_.end(runtime::CallState::failed);
      fail(e);
      throw explained(e);
    }
  }

  // Waits (bounded) until every rank has voted, and throws mismatch if any differ. Called before
  // anything that must not start unless all agree: MPI's blocking calls (MPI_Comm_split) and MPI's
  // collectives, which abort the whole job on mismatched sizes (their errors go to MPI_COMM_WORLD's
  // fatal handler, not this communicator's); and by finish(), so no call returns before it.
  void agree() {
    if (size_ == 2) {
      if (!checked_) wait(check_, 2, [&] { return chorus::detail::concat("rank ", previous(), "'s call descriptor"); });
      poll();  // compares
      return;
    }
    if (!voted_) wait(&vote_, 1, [] { return std::string("every rank to agree on the call"); });
    evaluate_vote();
  }

  // Completes the call's checks: the vote and the neighbour's descriptor.
  void finish() {
    agree();
    if (!checked_) wait(check_, 2, [&] { return chorus::detail::concat("rank ", previous(), "'s call descriptor"); });
    poll();
  }

  // A failure mid-call: tell the family (releasing every peer), then the caller rethrows.
  void fail(const Error& error) { fault_->raise(error.code(), error.what()); }

  // Family failures, the neighbour's descriptor and the vote; throws on any of them.
  void poll() {
    fault_->poll(call_, name());
    if (!checked_) {
      int done = 0;
      check_mpi(MPI_Testall(2, check_, &done, MPI_STATUSES_IGNORE), call_, name(), "MPI_Testall");
      if (done) compare();
    }
    if (!voted_) {
      int done = 0;
      check_mpi(MPI_Test(&vote_, &done, MPI_STATUS_IGNORE), call_, name(), "MPI_Test");
      if (done) evaluate_vote();
    }
  }

  // Waits until ready() is true, polling for failures; `waiting_for()` describes what is awaited
  // for the timeout error.
  template <class Ready, class Describe>
  void wait_for(Ready&& ready, Describe&& waiting_for) {
    runtime::wait_until(
        timeout_ms_, yields_, ready, [&] { poll(); },
        [&]() -> long {
          // A rank whose neighbour has arrived waits once more, so the rank still missing its
          // neighbour times out first and the error every rank gets names the absent one.
          if (collective_ && checked_ && !grace_used_) {
            grace_used_ = true;
            return timeout_ms_;
          }
          throw make_error(ErrorCode::timeout, call_, name(), "waited ", timeout_ms_, " ms for ", waiting_for(),
                           " (CHORUS_TIMEOUT_MS)",
                           collective_ && !checked_
                               ? chorus::detail::concat("; rank ", previous(), " has not reached this call")
                               : std::string());
        },
        max_sleep_);
  }

  // Waits for `count` requests; `statuses` (count of them) receive their statuses if not null.
  template <class Describe>
  void wait(MPI_Request* requests, int count, Describe&& waiting_for, MPI_Status* statuses = MPI_STATUSES_IGNORE) {
    wait_for(
        [&] {
          int done = 0;
          const int code = MPI_Testall(count, requests, &done, statuses);
          if (code == MPI_ERR_IN_STATUS && statuses != MPI_STATUSES_IGNORE) {
            // A longer message than expected means the ranks disagree: report that before any other
            // error (MPI_ERR_PENDING marks requests that simply have not finished).
            for (int i = 0; i < count; ++i) {
              int error_class = MPI_SUCCESS;
              MPI_Error_class(statuses[i].MPI_ERROR, &error_class);
              if (error_class == MPI_ERR_TRUNCATE) mismatched_message("a peer sent a longer message than expected");
            }
            for (int i = 0; i < count; ++i) {
              if (statuses[i].MPI_ERROR != MPI_ERR_PENDING) check_mpi(statuses[i].MPI_ERROR, call_, name(), "a message");
            }
          }
          check_mpi(code, call_, name(), "MPI_Testall");
          return done != 0;
        },
        waiting_for);
  }

  // A message of the wrong size: the descriptors explain it far better (which rank passed which
  // count), so the check is completed first and reports if it can.
  [[noreturn]] void mismatched_message(const std::string& what) {
    if (collective_ && !checked_) {
      wait(check_, 2, [&] { return chorus::detail::concat("rank ", previous(), "'s call descriptor"); });
      compare();
    }
    throw make_error(ErrorCode::mismatch, call_, name(), what);
  }

 private:
  // A call's state and its timeout (a malformed CHORUS_TIMEOUT_MS fails it before anything is recorded).
  void enter(const char* call) {
    call_ = call;
    collective_ = false;
    grace_used_ = false;
    try {
      timeout_ms_ = env::timeout_ms();
    } catch (const Error& e) {
      throw make_error(ErrorCode::invalid_argument, call, name(), e.what());
    }
  }

  // begin()'s messages: this rank's descriptor to the next rank, the previous rank's, and the vote.
  void post_checks(const runtime::CallDescriptor& descriptor) {
    memory_->outgoing = to_wire(descriptor, sequence_);
    memory_->incoming = WireCall{};
    check_mpi(MPI_Isend(&memory_->outgoing, sizeof(WireCall), MPI_BYTE, (rank_ + 1) % size_, kDescriptorTag,
                        control_, &check_[0]), call_, name(), "MPI_Isend");
    check_mpi(MPI_Irecv(&memory_->incoming, sizeof(WireCall), MPI_BYTE, previous(), kDescriptorTag, control_,
                        &check_[1]), call_, name(), "MPI_Irecv");
    const WireCall& w = memory_->outgoing;
    const std::int64_t fields[kVotedFields] = {static_cast<std::int64_t>(w.sequence), w.kind, w.type,
                                               static_cast<std::int64_t>(w.count), w.op, w.root, w.pattern,
                                               w.in_place};
    for (int i = 0; i < kVotedFields; ++i) {
      memory_->votes[i] = fields[i];                  // the maximum
      memory_->votes[kVotedFields + i] = -fields[i];  // minus the minimum
    }
    if (voted_) return;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, memory_->votes, 2 * kVotedFields, MPI_INT64_T, MPI_MAX, control_, &vote_),
              call_, name(), "MPI_Iallreduce");
  }

  void evaluate_vote() {
    voted_ = true;
    if (evaluated_) return;
    evaluated_ = true;
    static const char* const kNames[kVotedFields] = {"call number", "collective", "type", "count",
                                                     "op",          "root",       "algorithm", "in-place"};
    const std::int64_t* votes = memory_->votes;
    for (int i = 0; i < kVotedFields; ++i) {
      const std::int64_t low = -votes[kVotedFields + i], high = votes[i];
      if (low == high) continue;
      // The neighbour's descriptor names ranks and values, when it is the one that differs.
      if (!checked_) wait(check_, 2, [&] { return chorus::detail::concat("rank ", previous(), "'s call descriptor"); });
      compare();
      throw make_error(ErrorCode::mismatch, call_, name(), "ranks disagree: ", kNames[i], " ", field_name(i, low),
                       " on some ranks, ", field_name(i, high), " on others");
    }
  }

  // A voted field's value as the descriptor check would print it.
  static std::string field_name(int field, std::int64_t value) {
    switch (field) {
      case 1: return runtime::to_string(static_cast<runtime::CallKind>(value));
      case 2: return to_string(static_cast<DataType>(value));
      case 4: return to_string(static_cast<ReduceOp>(value));
      case 6: return algo::to_string(static_cast<algo::Pattern>(value));
      case 7: return value != 0 ? "yes" : "no";
      default: return std::to_string(value);
    }
  }

  int previous() const { return (rank_ + size_ - 1) % size_; }

  void compare() {
    checked_ = true;
    const WireCall& incoming = memory_->incoming;
    const runtime::CallDescriptor theirs = from_wire(incoming);
    if (incoming.sequence != sequence_) {
      throw make_error(ErrorCode::mismatch, call_, name(), "rank ", previous(), " is at call ", incoming.sequence,
                       " (", runtime::to_string(theirs.kind), ") while this rank is at call ", sequence_, " (",
                       runtime::to_string(mine_.kind), "): a rank skipped or added a call");
    }
    const std::string difference = runtime::first_difference(mine_, rank_, theirs, previous());
    if (!difference.empty()) throw make_error(ErrorCode::mismatch, call_, name(), "ranks disagree: ", difference);
  }

  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  MPI_Comm p2p_ = MPI_COMM_NULL;
  std::shared_ptr<FaultChannel> fault_;
  int rank_ = 0;
  int size_ = 1;
  int yields_ = 0;
  std::chrono::microseconds max_sleep_{};
  long timeout_ms_ = kDefaultTimeoutMs;
  const char* call_ = "";
  std::uint64_t sequence_ = 0;
  runtime::FlightRecorder recorder_;
  CommName comm_name_;
  LogLevel log_level_ = LogLevel::warn;
  bool dumped_ = false;  // this rank's record was written under CHORUS_TRACE_DUMP
  runtime::CallDescriptor mine_;
  bool checked_ = true;
  bool collective_ = false;
  bool grace_used_ = false;
  std::unique_ptr<CallMemory> memory_ = std::make_unique<CallMemory>();
  MPI_Request check_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Request vote_ = MPI_REQUEST_NULL;
  MPI_Request drain_ = MPI_REQUEST_NULL;
  bool drain_posted_ = false;
  bool voted_ = true;      // the vote's request has completed
  bool evaluated_ = true;  // and its result has been looked at
};

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
