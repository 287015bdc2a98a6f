// The memory the ranks of one communicator share. Each field has one writer (named below); the
// others read it after an acquire of the atomic that the writer released, so the data path
// needs no locks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/desync_summary.hpp"
#include "../runtime/flight_record_json.hpp"
#include "../runtime/flight_recorder.hpp"
#include "../runtime/schedule_cache.hpp"
#include "../runtime/step_trace.hpp"
#include "../core/env.hpp"
#include "../core/log.hpp"
#include "channel.hpp"
#include "fault.hpp"
#include "scratch_buffer.hpp"
#include "tuning.hpp"
#include "../runtime/wait.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

class SharedState;

// The ring order of a communicator made of `members` (ranks of a parent whose ring order is
// `parent_order`, empty meaning 0, 1, ...), in the new communicator's ranks: the parent's ring
// with non-members left out, so neighbours stay as close as the parent placed them. Empty when
// that is 0, 1, ..., members.size()-1.
inline std::vector<int> ring_order_of_members(const std::vector<int>& parent_order, const std::vector<int>& members,
                                              int parent_size) {
  std::vector<int> new_rank(static_cast<std::size_t>(parent_size), -1);
  for (std::size_t i = 0; i < members.size(); ++i) new_rank[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
  std::vector<int> order;
  bool identity = true;
  for (int p = 0; p < parent_size; ++p) {
    const int parent_rank = parent_order.empty() ? p : parent_order[static_cast<std::size_t>(p)];
    const int rank = new_rank[static_cast<std::size_t>(parent_rank)];
    if (rank < 0) continue;
    identity = identity && rank == static_cast<int>(order.size());
    order.push_back(rank);
  }
  if (identity) order.clear();
  return order;
}

// Packs (call sequence, steps posted) so one acquire load tells a receiver both that the sender
// is in the same call and how far it got. The sequence is kept modulo 2^32: a receiver only ever
// waits for a peer that is in the same call or the one before.
inline std::uint64_t progress_word(std::uint64_t sequence, std::uint64_t steps) {
  return (sequence << 32) | (steps & 0xffffffffu);
}
inline bool progress_reached(std::uint64_t word, std::uint64_t sequence, std::uint64_t steps) {
  return (word >> 32) == (sequence & 0xffffffffu) && (word & 0xffffffffu) >= steps;
}

// One entry of a rank's two-entry descriptor ring (indexed by sequence % 2). `call` is written
// before `sequence` is released; a peer reads it only after acquiring the sequence it expects.
// Two entries suffice: a rank cannot finish call s+1 before every peer has entered it, that is,
// before every peer is done with call s.
struct Descriptor {
  std::atomic<std::uint64_t> sequence{0};
  runtime::CallDescriptor call{};
};

// Everything one rank publishes; written by that rank only.
struct alignas(64) RankSlot {
  // Steps posted in the current call (a send is visible to its receiver once posted).
  std::atomic<std::uint64_t> progress{0};
  // Buffer bases for the current call, published before the first progress store.
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
  Descriptor calls[2];
  // This rank's last calls on this communicator; peers snapshot it to explain a hang.
  runtime::FlightRecorder recorder;
  // 1 + the rank whose memory this rank is reading right now, else 0. A rank leaving a call
  // with an error aborts the team, then waits until no peer reads its buffers, so the caller
  // may free them: a reader sets this, then checks the abort flag (both sequentially
  // consistent), so either the reader sees the abort and does not read, or the leaving rank
  // sees the marker and waits.
  alignas(64) std::atomic<int> reading{0};
  ScratchBuffer scratch_memory;
  // split(): the new communicator's state, created by the first member of a colour and read by
  // the others after a barrier.
  std::shared_ptr<SharedState> handoff;
};

// Each rank's flight recorder keeps this many calls: CHORUS_TRACE_BUFFER, else 2048, fewer in teams so
// large that the team's recorders would pass kRecorderBudget bytes (a 4096-rank team keeps 256 calls).
// An explicit CHORUS_TRACE_BUFFER is held to the same budget (at least 64 calls per rank), with a
// warning: 1048576 calls for each of 4096 ranks would be 256 GiB. Throws chorus::Error for a malformed knob.
inline constexpr std::size_t kRecorderBudget = std::size_t{64} << 20;
inline std::size_t recorder_capacity(int team_size) {
  constexpr std::size_t kEntryBytes = 64;
  constexpr std::size_t kMinimum = 64;
  const long asked = env::trace_buffer();
  const std::size_t fits = std::max(kMinimum, kRecorderBudget / kEntryBytes / static_cast<std::size_t>(team_size));
  if (asked < 0) return std::min(runtime::FlightRecorder::kDefaultCapacity, fits);
  if (static_cast<std::size_t>(asked) > fits) {
    log(LogLevel::warn, "CHORUS_TRACE_BUFFER=", asked, " for a team of ", team_size, " ranks would take ",
        static_cast<std::size_t>(asked) * kEntryBytes * static_cast<std::size_t>(team_size) >> 20,
        " MiB; keeping ", fits, " calls per rank (the team's recorders are held to ", kRecorderBudget >> 20, " MiB)");
    return fits;
  }
  return static_cast<std::size_t>(asked);
}

class SharedState {
 public:
  // `team_ranks[r]` is the Team rank of this communicator's rank r (for messages and exit checks);
  // each rank's flight recorder keeps `recorder_calls` calls.
  SharedState(std::shared_ptr<Fault> fault, std::vector<int> team_ranks, bool is_team, std::size_t recorder_calls)
      : id_(next_id()),
        recorder_calls_(recorder_calls),
        fault_(std::move(fault)),
        team_ranks_(std::move(team_ranks)),
        size_(static_cast<int>(team_ranks_.size())),
        is_team_(is_team),
        slots_(new RankSlot[team_ranks_.size()]),
        acks_(new std::atomic<std::uint64_t>[team_ranks_.size() * team_ranks_.size()]()),  // zeroed
        yields_(runtime::WaitPolicy::yields(fault_->size())),
        max_sleep_(runtime::WaitPolicy::max_sleep(fault_->size())) {
    for (int r = 0; r < size_; ++r) slot(r).recorder.set_capacity(recorder_calls);
  }

  // Names this communicator in dumps and traces; unique within the process.
  std::uint32_t id() const { return id_; }
  std::size_t recorder_calls() const { return recorder_calls_; }
  // CHORUS_LOG as read when the run started (Team::run; a split inherits it), so a call that may log
  // (a schedule-cache miss) costs a load and a compare, not a getenv, when logging is off.
  LogLevel log_level() const { return log_level_; }
  void set_log_level(LogLevel level) { log_level_ = level; }

  // What dumps of this communicator's records say they are of (flight_record_json.hpp).
  runtime::DumpOrigin dump_origin() const {
    return runtime::DumpOrigin{chorus::detail::concat(runtime::process_tag(), "-comm", id_), size_};
  }

  // Every rank's flight record, as any rank may read it at any time (a hang's explanation).
  std::vector<runtime::RankRecord> flight_records() const {
    std::vector<runtime::RankRecord> ranks(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      runtime::RankRecord& record = ranks[static_cast<std::size_t>(r)];
      record.rank = r;
      record.calls = slot(r).recorder.snapshot();
      record.returned = fault_->exited(team_rank(r));
    }
    return ranks;
  }

  // The team's step trace while CHORUS_TRACE is set (else null); split communicators share it.
  runtime::StepTrace* trace() const { return trace_.get(); }
  const std::shared_ptr<runtime::StepTrace>& trace_ptr() const { return trace_; }
  // Only between runs.
  void set_trace(std::shared_ptr<runtime::StepTrace> trace) { trace_ = std::move(trace); }

  int size() const { return size_; }
  // Waits yield this often before sleeping; set by the team's thread count, not this
  // communicator's size, since every rank thread of the team competes for the cores.
  int yields() const { return yields_; }
  std::chrono::microseconds max_sleep() const { return max_sleep_; }
  int team_size() const { return fault_->size(); }
  bool is_team() const { return is_team_; }
  int team_rank(int rank) const { return team_ranks_[static_cast<std::size_t>(rank)]; }
  // How errors name `rank`: with its team rank too when this communicator was split from the team.
  RankName name(int rank) const { return is_team_ ? RankName(rank) : RankName(rank, team_rank(rank)); }
  Fault& fault() const { return *fault_; }
  const std::shared_ptr<Fault>& fault_ptr() const { return fault_; }

  RankSlot& slot(int rank) const { return slots_[static_cast<std::size_t>(rank)]; }
  // Sends from `from` to `to` that `to` has consumed, over the communicator's lifetime; written by
  // `to`. Stored by receiver, so each rank writes only its own row (no false sharing between
  // writers; n*n words stay small for the rank counts threads make sense for).
  std::atomic<std::uint64_t>& acks(int from, int to) const { return acks_[index(to, from)]; }
  // Point-to-point channels, allocated on the first send or recv (most programs use none, and
  // there are n*n of them, one cache line each).
  Channel& channel(int from, int to) const {
    std::call_once(channels_once_, [this] { channels_.reset(new Channel[static_cast<std::size_t>(size_) * size_]); });
    return channels_[index(from, to)];
  }
  runtime::ScheduleStore& schedules() const { return schedules_; }
  // Ring and chain patterns place ranks in this order (empty: 0, 1, ..., n-1): set on the team's
  // communicator between runs (Team::set_ring_order, e.g. from topo::best_ring_order); a split
  // communicator inherits its parent's order restricted to its members (ring_order_of_members).
  const std::vector<int>& ring_order() const { return schedules_.ring_order(); }
  void set_ring_order(std::vector<int> order) { schedules_.set_ring_order(std::move(order)); }
  // Who resolves Algorithm::automatic: null = the thresholds of tuning.hpp (Team::set_automatic);
  // split communicators share their parent's.
  const std::shared_ptr<const AutomaticChoice>& automatic() const { return automatic_; }
  void set_automatic(std::shared_ptr<const AutomaticChoice> choice) { automatic_ = std::move(choice); }

  // Called by a rank leaving a call with an exception (`reason`): make sure the team is aborted
  // (so no peer starts reading this rank's memory), then wait out reads in progress. Reads are
  // plain copies that never wait, so this ends quickly.
  void withdraw(int rank, const char* reason) const noexcept {
    if (!fault_->aborted()) {
      try {
        fault_->abort(team_rank(rank), ErrorCode::peer_failed, reason);
      } catch (...) {  // no memory for the message: the flag matters more
        fault_->abort(team_rank(rank), ErrorCode::peer_failed, std::string());
      }
    }
    for (int peer = 0; peer < size_; ++peer) {
      for (int round = 0; peer != rank && slot(peer).reading.load(std::memory_order_seq_cst) == rank + 1; ++round) {
        if (round > 64) std::this_thread::yield();
      }
    }
  }

  // Whether `peer` is blocked on a third rank: then it, not this rank, should report a timeout
  // (its message names the rank that is really missing), so this rank waits once more.
  bool waits_elsewhere(int rank, int peer) const {
    const int awaited = fault_->waiting(team_rank(peer));
    return awaited >= 0 && awaited != team_rank(rank);
  }

  // A reader's side of the handshake above: returns false (and reads nothing) once aborted.
  bool start_reading(int rank, int peer) const {
    slot(rank).reading.store(peer + 1, std::memory_order_seq_cst);
    if (fault_->aborted_strict()) {
      slot(rank).reading.store(0, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  void stop_reading(int rank) const { slot(rank).reading.store(0, std::memory_order_release); }

  // Only between runs: no rank thread is alive. Scratch memory is kept for the next run.
  void reset() {
    for (int r = 0; r < size_; ++r) {
      RankSlot& s = slot(r);
      s.progress.store(0, std::memory_order_relaxed);
      s.reading.store(0, std::memory_order_relaxed);
      s.input = nullptr;
      s.output = nullptr;
      s.scratch = nullptr;
      for (Descriptor& d : s.calls) d.sequence.store(0, std::memory_order_relaxed);
      s.recorder.clear();
      s.handoff.reset();
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(size_) * size_; ++i) {
      acks_[i].store(0, std::memory_order_relaxed);
      if (channels_) channels_[i].reset();
    }
  }

 private:
  std::size_t index(int from, int to) const {
    return static_cast<std::size_t>(from) * static_cast<std::size_t>(size_) + static_cast<std::size_t>(to);
  }

  static std::uint32_t next_id() {
    static std::atomic<std::uint32_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed);
  }

  std::uint32_t id_;
  std::size_t recorder_calls_;
  LogLevel log_level_ = LogLevel::warn;
  std::shared_ptr<runtime::StepTrace> trace_;
  std::shared_ptr<Fault> fault_;
  std::vector<int> team_ranks_;
  int size_;
  bool is_team_;
  std::unique_ptr<RankSlot[]> slots_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> acks_;
  mutable std::once_flag channels_once_;
  mutable std::unique_ptr<Channel[]> channels_;
  mutable runtime::ScheduleStore schedules_;
  std::shared_ptr<const AutomaticChoice> automatic_;
  int yields_;
  std::chrono::microseconds max_sleep_;
};

// Publishes, while a wait is slow, whom this rank waits for; see SharedState::waits_elsewhere.
class WaitingMark {
 public:
  WaitingMark(const SharedState& state, int rank, int peer) : state_(state), rank_(rank), peer_(peer) {}
  WaitingMark(const WaitingMark&) = delete;
  WaitingMark& operator=(const WaitingMark&) = delete;
  ~WaitingMark() {
    if (set_) state_.fault().set_waiting(state_.team_rank(rank_), -1);
  }
  void set() {
    if (set_) return;
    set_ = true;
    state_.fault().set_waiting(state_.team_rank(rank_), state_.team_rank(peer_));
  }
  long waited_ms(long timeout_ms) const { return graced_ ? 2 * timeout_ms : timeout_ms; }
  // True the first time the deadline passes while the peer itself waits for a third rank.
  bool grace() {
    if (graced_ || !state_.waits_elsewhere(rank_, peer_)) return false;
    graced_ = true;
    return true;
  }

 private:
  const SharedState& state_;
  int rank_;
  int peer_;
  bool set_ = false;
  bool graced_ = false;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
