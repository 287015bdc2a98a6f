// A rank's flight recorder for one communicator: a fixed ring of its last N calls (CallRecord), cheap
// enough to stay on for every call, so a hang can be explained after the fact (desync_summary.hpp)
// and dumped as JSON (flight_record_json.hpp).
//
// One thread (the rank's) writes; any thread may take a snapshot while it does: a host rank that
// times out reads every peer's recorder to say who is behind. Each entry is a seqlock over atomic
// words, so the writer never waits or locks and a reader retries the rare entry it caught half
// written. The ring is allocated once, on the rank's first call; after that recording allocates
// nothing and costs a clock read at each end of a call and a few stores.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../core/config.hpp"
#include "call_descriptor.hpp"
#include "call_record.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

inline std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class FlightRecorder {
 public:
  static constexpr std::size_t kDefaultCapacity = 2048;

  FlightRecorder() = default;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Set before the owner's first call (0: record nothing).
  void set_capacity(std::size_t capacity) { capacity_ = capacity; }
  std::size_t capacity() const { return capacity_; }
  bool enabled() const { return capacity_ > 0; }

  // Owner only. Starts the record of call `sequence`, state posted.
  void post(std::uint64_t sequence, const CallDescriptor& call) {
    if (capacity_ == 0) return;
    if (!entries_) entries_.reset(new Entry[capacity_]);
    current_ = &entries_[static_cast<std::size_t>(sequence_count_ % capacity_)];
    CallRecord record;
    record.sequence = sequence;
    record.call = call;
    record.start_ns = steady_now_ns();
    current_->write(record);
    recorded_.store(++sequence_count_, std::memory_order_release);
  }
  // Owner only, after post(): the schedule is known and the steps start. The in-place updates below
  // change one word each and then the state, with release stores; a reader loads the state first,
  // with acquire (Entry::read), so a state it sees comes with what was written before it: a "done"
  // call always has its end time, a "running" one its step count. (Bumping the seqlock for them
  // instead would let an owner stepping fast starve a reader.)
  void run(std::int32_t steps) {
    if (current_ == nullptr) return;
    current_->word[kSteps].store(pack_steps(current_->root(), steps), std::memory_order_release);
    current_->set_state(CallState::running);
  }
  void at_step(std::int32_t step, std::int32_t peer) {
    if (current_ == nullptr) return;
    current_->word[kStep].store(pack_pair(step, peer), std::memory_order_release);
  }
  void end(CallState state) {
    if (current_ == nullptr) return;
    current_->word[kEnd].store(static_cast<std::uint64_t>(steady_now_ns()), std::memory_order_release);
    current_->set_state(state);
    current_ = nullptr;
  }

  // Only while no rank runs (between Team runs).
  void clear() {
    sequence_count_ = 0;
    current_ = nullptr;
    recorded_.store(0, std::memory_order_relaxed);
  }

  // Any thread: the records still in the ring, oldest first. While the owner keeps calling, it
  // overwrites the oldest entries under the reader's eyes (the ring wraps), oldest first. So the
  // reader goes the other way, newest first, and stops at the first entry that is not older than the
  // one after it: what it returns is a run of calls in order, never a newer call in an older one's
  // place (which made a rank look as if it had reached an earlier call, and skewed the summary).
  // A reader so slow that the owner lapped the whole ring while it read starts again (a few times).
  std::vector<CallRecord> snapshot() const {
    std::vector<CallRecord> records;
    for (int attempt = 0; attempt < 16 && records.empty(); ++attempt) {
      const std::uint64_t total = recorded_.load(std::memory_order_acquire);
      if (total == 0 || !entries_) return records;
      const std::uint64_t kept = total < capacity_ ? total : capacity_;
      records.reserve(static_cast<std::size_t>(kept));
      for (std::uint64_t i = total; i-- > total - kept;) {
        CallRecord record;
        if (!entries_[static_cast<std::size_t>(i % capacity_)].read(record)) break;
        if (!records.empty() && record.sequence >= records.back().sequence) break;  // overwritten meanwhile
        records.push_back(record);
      }
    }
    std::reverse(records.begin(), records.end());
    return records;
  }

 private:
  enum Word { kSequence, kCount, kStart, kEnd, kFields, kSteps, kStep, kWords };

  static std::uint64_t pack_pair(std::int32_t low, std::int32_t high) {
    return static_cast<std::uint32_t>(low) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(high)) << 32);
  }
  static std::uint64_t pack_steps(std::int32_t root, std::int32_t steps) { return pack_pair(root, steps); }
  static std::int32_t low(std::uint64_t word) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(word)); }
  static std::int32_t high(std::uint64_t word) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(word >> 32)); }

  // kind, type, op, pattern, in-place and state, a byte each.
  static std::uint64_t pack_fields(const CallDescriptor& call, CallState state) {
    return static_cast<std::uint64_t>(call.kind) | static_cast<std::uint64_t>(call.type) << 8 |
           static_cast<std::uint64_t>(call.op) << 16 | static_cast<std::uint64_t>(call.pattern) << 24 |
           static_cast<std::uint64_t>(call.in_place) << 32 | static_cast<std::uint64_t>(state) << 40;
  }

  struct alignas(64) Entry {
    std::atomic<std::uint64_t> version{0};  // odd while the owner rewrites the entry
    std::atomic<std::uint64_t> word[kWords] = {};

    std::int32_t root() const { return low(word[kSteps].load(std::memory_order_relaxed)); }

    void set_state(CallState state) {
      const std::uint64_t fields = word[kFields].load(std::memory_order_relaxed);
      word[kFields].store((fields & ~(std::uint64_t{0xff} << 40)) | static_cast<std::uint64_t>(state) << 40,
                          std::memory_order_release);
    }

    void write(const CallRecord& r) {
      // Seqlock without fences (Boehm, "Can seqlocks get along with programming language memory
      // models?"): release stores of the words keep the odd version ahead of them, acquire loads in
      // read() keep the second version load behind them. Both are plain moves on x86, and TSan
      // understands them (it does not model fences).
      const std::uint64_t v = version.load(std::memory_order_relaxed);
      version.store(v + 1, std::memory_order_relaxed);
      word[kSequence].store(r.sequence, std::memory_order_release);
      word[kCount].store(r.call.count, std::memory_order_release);
      word[kStart].store(static_cast<std::uint64_t>(r.start_ns), std::memory_order_release);
      word[kEnd].store(static_cast<std::uint64_t>(r.end_ns), std::memory_order_release);
      word[kFields].store(pack_fields(r.call, r.state), std::memory_order_release);
      word[kSteps].store(pack_steps(r.call.root, r.steps), std::memory_order_release);
      word[kStep].store(pack_pair(r.step, r.peer), std::memory_order_release);
      version.store(v + 2, std::memory_order_release);
    }

    // False when the owner was rewriting the entry throughout a few tries (it moved on: the entry
    // belongs to a newer call than the snapshot asked for).
    bool read(CallRecord& r) const {
      for (int attempt = 0; attempt < 8; ++attempt) {
        const std::uint64_t before = version.load(std::memory_order_acquire);
        if (before % 2 != 0) continue;
        // The state first: what run() and end() wrote before it is then visible (see run()).
        std::uint64_t w[kWords];
        w[kFields] = word[kFields].load(std::memory_order_acquire);
        for (int i = 0; i < kWords; ++i) {
          if (i != kFields) w[i] = word[i].load(std::memory_order_acquire);
        }
        if (version.load(std::memory_order_relaxed) != before) continue;
        r.sequence = w[kSequence];
        r.call.count = static_cast<std::size_t>(w[kCount]);
        r.start_ns = static_cast<std::int64_t>(w[kStart]);
        r.end_ns = static_cast<std::int64_t>(w[kEnd]);
        r.call.kind = static_cast<CallKind>(w[kFields] & 0xff);
        r.call.type = static_cast<DataType>((w[kFields] >> 8) & 0xff);
        r.call.op = static_cast<ReduceOp>((w[kFields] >> 16) & 0xff);
        r.call.pattern = static_cast<algo::Pattern>((w[kFields] >> 24) & 0xff);
        r.call.in_place = ((w[kFields] >> 32) & 0xff) != 0;
        r.state = static_cast<CallState>((w[kFields] >> 40) & 0xff);
        r.call.root = low(w[kSteps]);
        r.steps = high(w[kSteps]);
        r.step = low(w[kStep]);
        r.peer = high(w[kStep]);
        // Words written after the state was loaded belong to a later state of the call: leave them out.
        if (r.state == CallState::posted) {
          r.steps = 0;
          r.step = CallRecord::kNoStep;
          r.peer = -1;
        }
        if (r.state == CallState::posted || r.state == CallState::running) r.end_ns = 0;
        return true;
      }
      return false;
    }
  };

  std::size_t capacity_ = kDefaultCapacity;
  std::unique_ptr<Entry[]> entries_;
  Entry* current_ = nullptr;
  std::uint64_t sequence_count_ = 0;  // owner's copy of recorded_
  std::atomic<std::uint64_t> recorded_{0};
};

// The step interpreter's observer (interpreter.hpp) for a backend that records only where a call is:
// the step in progress and the peer it exchanges with.
struct RecordSteps {
  FlightRecorder& recorder;

  void begin(std::size_t index, const algo::Step& step, std::size_t) {
    const bool exchanges = step.op == algo::Op::send || algo::is_recv(step.op);
    recorder.at_step(static_cast<std::int32_t>(index), exchanges ? step.peer : -1);
  }
  void arrived(std::size_t) {}
  void end(std::size_t, const algo::Step&, std::size_t) {}
};

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
