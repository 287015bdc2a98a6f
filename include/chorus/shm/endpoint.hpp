// One rank's end of a shared-memory communicator: its mapping of the segment, the per-call agreement
// check, failure release through the segment, and the bounded wait everything goes through.
//
// Agreement: each call posts this rank's descriptor into its control slot (slot sequence % 2, then
// `posted` = sequence, release). Waits compare every peer that has posted the same call, so a
// mismatch is reported as soon as the differing rank arrives; finish() waits until every rank has
// posted the call and compares the rest. A rank therefore cannot finish call k before every rank has
// begun it, so it never posts k+2 (over slot k % 2) while a peer may still read its k: two slots
// suffice.
//
// Failure: the first rank to fail writes its report into the segment's header (one compare-exchange
// decides who); every wait polls the header, so the others stop at once with "released because rank R
// failed: <R's report>", with R's code when that was mismatch or timeout, else peer_failed. A
// communicator split from another also writes to and polls its family's first segment (the one
// created by the constructor), so a failure anywhere in the family releases every rank of it. A
// failed segment stays failed. A peer that dies (its pid gone or a zombie) without leaving the
// communicator is noticed by the next liveness check of any waiting rank (every 100 ms of waiting),
// which reports it as the failure; a peer that left cleanly is only an error if it is still needed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/flight_recorder.hpp"
#include "../runtime/own_record.hpp"
#include "../runtime/wait.hpp"
#include "../runtime/wire_call.hpp"
#include "call_memory.hpp"
#include "fifo.hpp"
#include "layout.hpp"
#include "segment.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

// A mapped segment shared by the communicators of one process that use it (a communicator and the
// family members that poll it for failures).
using SegmentPtr = std::shared_ptr<Segment>;

class Endpoint {
 public:
  // `family`: the segment of the communicator this one was split from (null: this one starts a family).
  Endpoint(SegmentPtr segment, SegmentPtr family, int rank, long timeout_ms, runtime::CommName name)
      : segment_(std::move(segment)),
        family_(family ? std::move(family) : segment_),
        layout_(segment_->header().ranks, segment_->header().slot_bytes, segment_->header().slots),
        rank_(rank),
        size_(layout_.ranks),
        timeout_ms_(timeout_ms),
        comm_name_(std::move(name)) {
    const long calls = env::trace_buffer();
    recorder_.set_capacity(calls >= 0 ? static_cast<std::size_t>(calls) : runtime::FlightRecorder::kDefaultCapacity);
    log_level_ = env::log_level();
    yields_ = runtime::WaitPolicy::yields(size_);
    max_sleep_ = runtime::WaitPolicy::max_sleep(size_);
    outgoing_.resize(static_cast<std::size_t>(size_));
    incoming_.resize(static_cast<std::size_t>(size_));
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      outgoing_[static_cast<std::size_t>(peer)] = Fifo(layout_, segment_->base(), rank_, peer);
      incoming_[static_cast<std::size_t>(peer)] = Fifo(layout_, segment_->base(), peer, rank_);
    }
    agreed_.assign(static_cast<std::size_t>(size_), 0);
    memory_.queues.resize(static_cast<std::size_t>(size_));
    // A peer in another pid namespace (a container sharing /dev/shm) has a pid this process cannot
    // look up: its death shows as a timeout instead of being mistaken for one at once.
    watched_.assign(static_cast<std::size_t>(size_), 0);
    const std::uint64_t here = pid_namespace();
    for (int peer = 0; peer < size_; ++peer) {
      watched_[static_cast<std::size_t>(peer)] = peer != rank_ && here != 0 && control(peer).pid_namespace == here;
    }
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  // Leaving cleanly tells waiting peers this rank is gone on purpose (not dead); a failed segment
  // needs no such word.
  ~Endpoint() { control(rank_).left.store(1, std::memory_order_release); }

  int rank() const { return rank_; }
  int size() const { return size_; }
  RankName name() const { return RankName(rank_); }
  const char* call() const { return call_; }
  std::uint64_t sequence() const { return sequence_; }
  long timeout_ms() const { return timeout_ms_; }
  void set_timeout_ms(long ms) { timeout_ms_ = ms; }
  const Layout& layout() const { return layout_; }
  const SegmentPtr& segment() const { return segment_; }
  const SegmentPtr& family() const { return family_; }
  Fifo& to(int peer) { return outgoing_[static_cast<std::size_t>(peer)]; }
  Fifo& from(int peer) { return incoming_[static_cast<std::size_t>(peer)]; }
  runtime::FlightRecorder& recorder() { return recorder_; }
  const runtime::FlightRecorder& recorder() const { return recorder_; }
  const runtime::CommName& comm_name() const { return comm_name_; }
  LogLevel log_level() const { return log_level_; }
  CallMemory& memory() { return memory_; }

  Error explained(const Error& error) {
    return runtime::with_own_record(error, recorder_, rank_, size_, comm_name_, call_, name(), dumped_);
  }

  // Starts a call that posts no descriptor (send, recv): fails now if the family has failed.
  void start(const char* call) {
    call_ = call;
    collective_ = false;
    try {
      check_failed();
    } catch (const Error& e) {
      throw explained(e);
    }
  }

  // Starts a collective call: posts this rank's descriptor. finish() completes the agreement check.
  void begin(const char* call, const runtime::CallDescriptor& descriptor) {
    call_ = call;
    collective_ = true;
    ++sequence_;
    mine_ = descriptor;
    recorder_.post(sequence_, descriptor);
    try {
      check_failed();
    } catch (const Error& e) {
      recorder_.end(runtime::CallState::failed);
      throw explained(e);
    }
    RankControl& me = control(rank_);
    me.calls[sequence_ % 2] = runtime::to_wire(descriptor, sequence_);
    me.posted.store(sequence_, std::memory_order_release);
    std::fill(agreed_.begin(), agreed_.end(), 0);
    agreed_[static_cast<std::size_t>(rank_)] = 1;
    unchecked_ = size_ - 1;
  }

  // Waits (bounded) until every rank has posted this call, comparing each descriptor with this rank's.
  void finish() {
    if (unchecked_ > 0) wait_for([&] { return unchecked_ == 0; }, [&] { return absent_ranks(); });
  }

  // A failure this rank found (timeout, mismatch, a dead peer): written to the segment unless a
  // failure is already there (then this rank is one of the released). `culprit`: the rank the report
  // names (this rank, or the dead one).
  void fail(const Error& error, int culprit = -1) {
    raise(*segment_, error, culprit < 0 ? rank_ : culprit);
    if (family_ != segment_) raise(*family_, error, culprit < 0 ? rank_ : culprit);
  }

  // Failures in the family, peers' descriptors, and (every 100 ms) peers' liveness. Throws.
  void poll() {
    check_failed();
    if (collective_ && unchecked_ > 0) compare_arrived();
    // The clock is read every 16th poll only: reading it every time was a quarter of a small call's
    // time (perf, 8 B all_reduce at 2 processes). Polls come at least every max_sleep_, so the 100 ms
    // still holds for teams up to hundreds of ranks per core.
    if (++polls_ % 16 != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_liveness_ >= std::chrono::milliseconds(100)) {
      last_liveness_ = now;
      check_peers_alive();
    }
  }

  // Waits until ready() is true, polling for failures; `waiting_for()` describes what is awaited for
  // the timeout error. Progress work (flushing queued sends) belongs in ready().
  template <class Ready, class Describe>
  void wait_for(Ready&& ready, Describe&& waiting_for) {
    runtime::wait_until(
        timeout_ms_, yields_, ready, [&] { poll(); },
        [&]() -> long {
          throw make_error(ErrorCode::timeout, call_, name(), "waited ", timeout_ms_, " ms for ", waiting_for(),
                           " (the communicator's timeout)", collective_ ? absent_note() : std::string());
        },
        max_sleep_);
  }

  // A message that cannot belong to this call: the descriptors explain it better when they differ,
  // so the check is completed first (bounded) and reports if it can.
  [[noreturn]] void mismatched_message(const std::string& what) {
    if (collective_ && unchecked_ > 0) {
      try {
        finish();
      } catch (const Error& e) {
        if (e.code() == ErrorCode::mismatch) throw;
      }
    }
    throw make_error(ErrorCode::mismatch, call_, name(), what);
  }

  // Whether the peer left the communicator on purpose (destroyed it).
  bool peer_left(int peer) const { return control(peer).left.load(std::memory_order_acquire) != 0; }

 private:
  RankControl& control(int rank) const {
    return reinterpret_cast<RankControl*>(segment_->base() + layout_.rank_control)[rank];
  }

  static void raise(Segment& segment, const Error& error, int culprit) {
    Header& h = segment.header();
    std::int32_t expected = 0;
    if (!h.failed.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
    h.failed_rank = culprit;
    h.failed_code = static_cast<std::int32_t>(error.code());
    std::strncpy(h.report, error.what(), kReportBytes - 1);
    h.report[kReportBytes - 1] = '\0';
    h.reported.store(1, std::memory_order_release);
  }

  void check_failed() {
    check_failed(*segment_);
    if (family_ != segment_) check_failed(*family_);
  }

  void check_failed(Segment& segment) {
    Header& h = segment.header();
    if (h.failed.load(std::memory_order_acquire) == 0) return;
    // The reporter writes a few hundred bytes after winning: wait for them, briefly (it may have died).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (h.reported.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < give_up) {
      runtime::cpu_relax();
    }
    if (h.reported.load(std::memory_order_acquire) == 0) {
      throw make_error(ErrorCode::peer_failed, call_, name(), "released: a rank failed but died before saying why");
    }
    const auto code = static_cast<ErrorCode>(h.failed_code);
    const bool whole_call = code == ErrorCode::mismatch || code == ErrorCode::timeout;
    throw make_error(whole_call ? code : ErrorCode::peer_failed, call_, name(), "released because rank ",
                     h.failed_rank, " failed: ", h.report);
  }

  // Compares every peer that has posted this call and not been compared yet.
  void compare_arrived() {
    for (int peer = 0; peer < size_; ++peer) {
      auto& agreed = agreed_[static_cast<std::size_t>(peer)];
      if (agreed) continue;
      const RankControl& theirs = control(peer);
      // `left` before `posted`: a peer sets left after its last post, so a peer seen to have left shows
      // its final post. Read the other way round, a peer could post, finish this very call and leave
      // between the two reads, and be taken for one that left before it.
      const bool left = peer_left(peer);
      const std::uint64_t posted = theirs.posted.load(std::memory_order_acquire);
      if (posted < sequence_) {
        if (left) {
          throw make_error(ErrorCode::mismatch, call_, name(), "rank ", peer, " destroyed its communicator after ",
                           posted, " calls; this rank is at call ", sequence_, " (", runtime::to_string(mine_.kind),
                           "): a rank skipped or added a call");
        }
        continue;
      }
      const runtime::WireCall shared = theirs.calls[sequence_ % 2];
      if (shared.sequence != sequence_) {
        throw make_error(ErrorCode::internal, call_, name(), "rank ", peer, "'s descriptor of call ", sequence_,
                         " was overwritten (it is at call ", shared.sequence, ")");
      }
      const std::string difference = runtime::first_difference(mine_, rank_, runtime::from_wire(shared), peer);
      if (!difference.empty()) {
        const Error e = make_error(ErrorCode::mismatch, call_, name(), "ranks disagree: ", difference);
        fail(e);
        throw e;
      }
      agreed = 1;
      --unchecked_;
    }
  }

  void check_peers_alive() {
    for (int peer = 0; peer < size_; ++peer) {
      if (!watched_[static_cast<std::size_t>(peer)] || peer_left(peer)) continue;
      const int pid = control(peer).pid.load(std::memory_order_acquire);
      // A peer that left and exited between the check above and this one is not dead: look again.
      if (process_alive(pid) || peer_left(peer)) continue;
      const Error e = make_error(ErrorCode::peer_failed, call_, name(), "rank ", peer, " (pid ", pid,
                                 ") died without leaving the communicator (killed or crashed)");
      fail(e, peer);
      check_failed();  // the report now in the segment may be another's, written first
      throw e;
    }
  }

  std::string absent_ranks() const {
    std::string ranks;
    for (int peer = 0; peer < size_; ++peer) {
      if (agreed_[static_cast<std::size_t>(peer)]) continue;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
    }
    return "every rank to reach call " + std::to_string(sequence_) + " (missing: rank " + ranks + ")";
  }

  std::string absent_note() const {
    std::string ranks;
    for (int peer = 0; peer < size_; ++peer) {
      if (control(peer).posted.load(std::memory_order_acquire) >= sequence_) continue;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
    }
    return ranks.empty() ? std::string() : "; not yet at this call: rank " + ranks;
  }

  SegmentPtr segment_;
  SegmentPtr family_;
  Layout layout_;
  int rank_;
  int size_;
  long timeout_ms_;
  runtime::CommName comm_name_;
  int yields_ = 0;
  std::chrono::microseconds max_sleep_{};
  LogLevel log_level_ = LogLevel::warn;
  const char* call_ = "";
  bool collective_ = false;
  std::uint64_t sequence_ = 0;
  runtime::CallDescriptor mine_;
  std::vector<char> agreed_;  // per rank: descriptor of the current call compared
  std::vector<char> watched_;  // per rank: its pid is checked for liveness
  int unchecked_ = 0;
  std::vector<Fifo> outgoing_;
  std::vector<Fifo> incoming_;
  CallMemory memory_;
  runtime::FlightRecorder recorder_;
  bool dumped_ = false;
  std::chrono::steady_clock::time_point last_liveness_ = std::chrono::steady_clock::now();
  std::uint32_t polls_ = 0;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
