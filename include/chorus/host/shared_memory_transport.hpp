// The host backend's transport for the step interpreter (runtime/interpreter.hpp): ranks are
// threads of one process, so a receiver copies or reduces straight out of the sender's published
// buffer (zero-copy), then acknowledges. The protocol, for rank r in call s:
//   begin    publish the call's descriptor (what r is doing at s).
//   send     record the range as pending and publish progress (s, steps posted) with release.
//   receive  acquire the sender's progress until it covers the matching send; compare the
//            sender's descriptor with ours before the first read from it (so mismatched ranks
//            never read out of bounds).
//   received release an acknowledgement.
//   before_write  wait for acknowledgement of r's own pending sends that overlap the range
//            (real addresses: in-place buffers alias).
//   finish   wait until every send is acknowledged and every peer has published a matching
//            descriptor for s, so every rank of a mismatched call fails, even one that
//            exchanged nothing with the culprit.
//   withdraw after an exception: abort the team and wait out peers reading this rank's memory.
// Every wait is bounded and watches the team's abort flag (peer_wait.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/interpreter.hpp"
#include "peer_wait.hpp"
#include "rank_state.hpp"
#include "shared_state.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

class SharedMemoryTransport {
 public:
  SharedMemoryTransport(const SharedState& state, int rank, RankState& me, const char* call,
                        const runtime::CallDescriptor& descriptor, long timeout_ms)
      : state_(state),
        rank_(rank),
        me_(me),
        descriptor_(descriptor),
        waiter_(state, call, rank, timeout_ms),
        mine_(state.slot(rank)) {}

  // Starts call s: publishes what this rank is doing so peers can check it.
  void begin() {
    waiter_.throw_if_aborted();
    sequence_ = ++me_.sequence;
    std::fill(me_.checked.begin(), me_.checked.end(), std::uint8_t{0});
    me_.checked[static_cast<std::size_t>(rank_)] = 1;
    me_.pending.clear();
    Descriptor& published = mine_.calls[sequence_ % 2];
    published.call = descriptor_;
    published.sequence.store(sequence_, std::memory_order_release);
  }

  // Waits for `peer`'s descriptor of this call (after checking it) and returns it. Valid until
  // this rank begins its next call.
  const runtime::CallDescriptor& peer_descriptor(int peer) {
    waiter_.wait(
        peer, [&] { return me_.checked[static_cast<std::size_t>(peer)] != 0 || check_descriptor(peer); }, [] {},
        [&] {
          const std::string after = steps_ > 0 ? concat(" after its last step (", steps_ - 1, ")") : std::string();
          return concat("at the end of call ", sequence_, " (", waiter_.call(), ")", after, ", waiting for rank ",
                        peer, " to enter the call");
        });
    return state_.slot(peer).calls[sequence_ % 2].call;
  }

  // Publishes the buffers of this call (peers read them) with this rank's scratch.
  runtime::Buffers attach(const algo::Schedule& schedule, runtime::Buffers caller, std::size_t element_size) {
    schedule_ = &schedule;
    element_size_ = element_size;
    const std::size_t scratch_bytes = schedule.scratch_count * element_size;
    steps_ = schedule.steps[static_cast<std::size_t>(rank_)].size();
    mine_.input = caller.input;
    mine_.output = caller.output;
    mine_.scratch = scratch_bytes > 0 ? mine_.scratch_memory.reserve(scratch_bytes) : nullptr;
    return runtime::Buffers{mine_.input, mine_.output, mine_.scratch};
  }

  void send(std::size_t index, const algo::Step& step, const std::byte* src, std::size_t bytes) {
    const std::uint64_t ordinal = ++me_.sent[static_cast<std::size_t>(step.peer)];
    if (bytes > 0) {
      const auto begin = reinterpret_cast<std::uintptr_t>(src);
      me_.pending.push_back(PendingSend{begin, begin + bytes, step.peer, ordinal});
    }
    mine_.progress.store(progress_word(sequence_, index + 1), std::memory_order_release);
  }

  const std::byte* receive(std::size_t index, const algo::Step& step, std::size_t bytes) {
    const int peer = step.peer;
    const RankSlot& theirs = state_.slot(peer);
    waiter_.wait(
        peer, [&] { return progress_reached(theirs.progress.load(std::memory_order_acquire), sequence_, step.match + 1u); },
        [&] { check_descriptor_once(peer); },
        [&] {
          return concat("at step ", index, " (", algo::to_string(step.op), " of ", step.count,
                        " elements), waiting for rank ", peer, " to post its step ", step.match, " of call ", sequence_);
        });
    check_descriptor_once(peer);
    if (bytes == 0) return nullptr;
    const algo::Step& send = schedule_->steps[static_cast<std::size_t>(peer)][step.match];
    const std::byte* src = runtime::SpanResolver(waiter_.call(), rank_,
                                                 runtime::Buffers{theirs.input, theirs.output, theirs.scratch},
                                                 element_size_)
                               .read(send.src, bytes);
    if (!state_.start_reading(rank_, peer)) throw waiter_.released();
    return src;
  }

  void received(std::size_t, const algo::Step& step, std::size_t bytes) {
    if (bytes > 0) state_.stop_reading(rank_);
    const auto p = static_cast<std::size_t>(step.peer);
    state_.acks(step.peer, rank_).store(++me_.received[p], std::memory_order_release);
  }

  // Before writing [dst, dst + bytes): every overlapping pending send must have been read.
  void before_write(std::size_t index, std::byte* dst, std::size_t bytes) {
    if (bytes == 0 || me_.pending.empty()) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(dst);
    const auto end = begin + bytes;
    for (const PendingSend& send : me_.pending) {
      if (send.ordinal <= me_.acked[static_cast<std::size_t>(send.peer)]) continue;
      if (send.begin < end && begin < send.end) wait_ack(send.peer, send.ordinal, index);
    }
    if (me_.pending.size() >= compact_at_) compact();
  }

  // Ends the call: all sends acknowledged, every peer's descriptor seen and equal to ours.
  void finish() {
    const int n = state_.size();
    for (int peer = 0; peer < n; ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (peer != rank_ && me_.acked[p] < me_.sent[p]) wait_ack(peer, me_.sent[p], kAtEnd);
    }
    for (int peer = 0; peer < n; ++peer) {
      if (me_.checked[static_cast<std::size_t>(peer)] == 0) peer_descriptor(peer);
    }
    me_.pending.clear();
  }

  // After an exception left the call: no peer may still read this rank's buffers.
  void withdraw(const char* reason) noexcept { state_.withdraw(rank_, reason); }

 private:
  template <class... Parts>
  static std::string concat(const Parts&... parts) {
    return chorus::detail::concat(parts...);
  }

  // Compares peer's descriptor for this call if it is published yet; returns whether it was.
  bool check_descriptor(int peer) {
    const Descriptor& published = state_.slot(peer).calls[sequence_ % 2];
    if (published.sequence.load(std::memory_order_acquire) != sequence_) return false;
    const std::string difference = runtime::first_difference(descriptor_, rank_, published.call, peer);
    if (!difference.empty()) {
      waiter_.fail(ErrorCode::mismatch, concat("ranks disagree at call ", sequence_, ": ", difference));
    }
    me_.checked[static_cast<std::size_t>(peer)] = 1;
    return true;
  }
  void check_descriptor_once(int peer) {
    if (me_.checked[static_cast<std::size_t>(peer)] == 0) check_descriptor(peer);
  }

  static constexpr std::size_t kAtEnd = static_cast<std::size_t>(-1);
  static constexpr std::size_t kCompactAt = 32;

  // `step` is the step about to overwrite sent data, or kAtEnd.
  void wait_ack(int peer, std::uint64_t ordinal, std::size_t step) {
    const std::atomic<std::uint64_t>& acks = state_.acks(rank_, peer);
    std::uint64_t seen = me_.acked[static_cast<std::size_t>(peer)];
    waiter_.wait(
        peer,
        [&] {
          seen = acks.load(std::memory_order_acquire);
          return seen >= ordinal;
        },
        [&] { check_descriptor_once(peer); },
        [&] {
          const std::string where = step == kAtEnd ? concat("at the end of call ", sequence_, " after its last step (",
                                                            steps_ - 1, ")")
                                                   : concat("at step ", step, " of call ", sequence_,
                                                            " (which overwrites data it sent)");
          return concat(where, ", waiting for rank ", peer, " to receive ", ordinal - seen,
                        " more message(s) from this rank");
        });
    me_.acked[static_cast<std::size_t>(peer)] = seen;
  }

  // Drops pending sends already read, so the list (scanned on every write) stays short; the
  // threshold doubles with what is left, keeping the work linear in the number of sends.
  void compact() {
    for (const PendingSend& send : me_.pending) {
      auto& acked = me_.acked[static_cast<std::size_t>(send.peer)];
      if (send.ordinal > acked) acked = state_.acks(rank_, send.peer).load(std::memory_order_acquire);
    }
    me_.pending.erase(std::remove_if(me_.pending.begin(), me_.pending.end(),
                                     [&](const PendingSend& send) {
                                       return send.ordinal <= me_.acked[static_cast<std::size_t>(send.peer)];
                                     }),
                      me_.pending.end());
    compact_at_ = std::max<std::size_t>(kCompactAt, 2 * me_.pending.size());
  }

  const SharedState& state_;
  int rank_;
  RankState& me_;
  const runtime::CallDescriptor& descriptor_;
  PeerWaiter waiter_;
  RankSlot& mine_;
  const algo::Schedule* schedule_ = nullptr;
  std::uint64_t sequence_ = 0;
  std::size_t steps_ = 0;
  std::size_t element_size_ = 1;
  std::size_t compact_at_ = kCompactAt;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
