// Executes one rank's part of a schedule over shared memory, zero-copy: a receiver copies or
// reduces straight out of the sender's published buffer, then acknowledges. The protocol, for
// rank r in call s:
//   begin   publish the call's descriptor (what r is doing at s).
//   send    record the range as pending and publish progress (s, steps posted) with release.
//   recv    acquire the sender's progress until it covers the matching send; compare the
//           sender's descriptor with ours before the first read from it (so mismatched ranks
//           never read out of bounds); read, combine, then release an acknowledgement.
//   write   before any step writes memory, wait for acknowledgement of r's own pending sends
//           that overlap it (real addresses: in-place buffers alias).
//   finish  wait until every send is acknowledged and every peer has published a matching
//           descriptor for s, so every rank of a mismatched call fails, even one that
//           exchanged nothing with the culprit.
// Every wait is bounded and watches the team's abort flag (see wait.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "../algo/schedule.hpp"
#include "../core/error.hpp"
#include "descriptor.hpp"
#include "kernels.hpp"
#include "rank_state.hpp"
#include "shared_state.hpp"
#include "wait.hpp"

namespace chorus::host::detail {

struct Buffers {
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
};

struct Call {
  const char* name = "";
  CallInfo info{};
  std::size_t element_size = 1;
  const Kernels* kernels = nullptr;
  long timeout_ms = 0;
};

class Executor {
 public:
  Executor(const SharedState& state, int rank, RankState& me, const Call& call)
      : state_(state), rank_(rank), me_(me), call_(call), mine_(state.slot(rank)) {}

  // Starts call s: publishes what this rank is doing so peers can check it.
  void begin() {
    if (state_.fault().aborted()) throw released();
    sequence_ = ++me_.sequence;
    std::fill(me_.checked.begin(), me_.checked.end(), std::uint8_t{0});
    me_.checked[static_cast<std::size_t>(rank_)] = 1;
    me_.pending.clear();
    Descriptor& descriptor = mine_.calls[sequence_ % 2];
    descriptor.info = call_.info;
    descriptor.sequence.store(sequence_, std::memory_order_release);
  }

  // Waits for `peer`'s descriptor of this call (after checking it) and returns it. Valid until
  // this rank begins its next call.
  const CallInfo& peer_info(int peer) {
    wait_for(
        peer, [&] { return me_.checked[static_cast<std::size_t>(peer)] != 0 || check_descriptor(peer); },
        [&] {
          const std::string after = steps_ > 0 ? concat(" after its last step (", steps_ - 1, ")") : std::string();
          return concat("at the end of call ", sequence_, " (", call_.name, ")", after, ", waiting for rank ", peer,
                        " to enter the call");
        });
    return state_.slot(peer).calls[sequence_ % 2].info;
  }

  // Runs this rank's steps of `schedule` on `buffers` (scratch comes from the rank's slot).
  void run(const algo::Schedule& schedule, Buffers buffers) {
    const std::size_t es = call_.element_size;
    mine_.input = buffers.input;
    mine_.output = buffers.output;
    mine_.scratch = schedule.scratch_count > 0 ? mine_.scratch_memory.reserve(schedule.scratch_count * es) : nullptr;
    const auto& steps = schedule.steps[static_cast<std::size_t>(rank_)];
    steps_ = steps.size();
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const algo::Step& step = steps[i];
      const std::size_t bytes = step.count * es;
      switch (step.op) {
        case algo::Op::send: {
          const std::byte* src = address(mine_, step.src, bytes);
          const std::uint64_t ordinal = ++me_.sent[static_cast<std::size_t>(step.peer)];
          if (bytes > 0) {
            const auto begin = reinterpret_cast<std::uintptr_t>(src);
            me_.pending.push_back(PendingSend{begin, begin + bytes, step.peer, ordinal});
          }
          mine_.progress.store(progress_word(sequence_, i + 1), std::memory_order_release);
          break;
        }
        case algo::Op::recv_copy:
        case algo::Op::recv_reduce: {
          const int peer = step.peer;
          const RankSlot& theirs = state_.slot(peer);
          wait_for(
              peer,
              [&] {
                return progress_reached(theirs.progress.load(std::memory_order_acquire), sequence_, step.match + 1u);
              },
              [&] {
                return concat("at step ", i, " (", algo::to_string(step.op), " of ", step.count,
                              " elements), waiting for rank ", peer, " to post its step ", step.match, " of call ",
                              sequence_);
              });
          if (me_.checked[static_cast<std::size_t>(peer)] == 0) check_descriptor(peer);
          const algo::Step& send = schedule.steps[static_cast<std::size_t>(peer)][step.match];
          const std::byte* src = address(theirs, send.src, bytes);
          std::byte* dst = mutable_address(step.dst, bytes);
          guard_write(dst, bytes, i);
          if (bytes > 0) {
            if (!state_.start_reading(rank_, peer)) throw released();
            if (step.op == algo::Op::recv_copy) {
              std::memcpy(dst, src, bytes);
            } else {
              call_.kernels->combine(call_.info.op, address(mine_, step.src, bytes), src, dst, step.count);
            }
            state_.stop_reading(rank_);
          }
          state_.acks(peer, rank_).store(++me_.received[static_cast<std::size_t>(peer)], std::memory_order_release);
          break;
        }
        case algo::Op::copy: {
          const std::byte* src = address(mine_, step.src, bytes);
          std::byte* dst = mutable_address(step.dst, bytes);
          if (bytes == 0 || src == dst) break;  // in place: the data is already there
          guard_write(dst, bytes, i);
          std::memmove(dst, src, bytes);
          break;
        }
        case algo::Op::reduce: {
          const std::byte* src = address(mine_, step.src, bytes);
          std::byte* dst = mutable_address(step.dst, bytes);
          if (bytes == 0) break;
          guard_write(dst, bytes, i);
          call_.kernels->combine(call_.info.op, dst, src, dst, step.count);
          break;
        }
      }
    }
  }

  // After an exception left run() or finish(): no peer may still read this rank's buffers.
  void withdraw(const char* reason) noexcept { state_.withdraw(rank_, reason); }

  // Ends the call: all sends acknowledged, every peer's descriptor seen and equal to ours.
  void finish() {
    const int n = state_.size();
    for (int peer = 0; peer < n; ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (peer != rank_ && me_.acked[p] < me_.sent[p]) wait_ack(peer, me_.sent[p], kAtEnd);
    }
    for (int peer = 0; peer < n; ++peer) {
      if (me_.checked[static_cast<std::size_t>(peer)] == 0) peer_info(peer);
    }
    me_.pending.clear();
  }

 private:
  template <class... Parts>
  static std::string concat(const Parts&... parts) {
    return chorus::detail::concat(parts...);
  }

  const char* rank_kind() const { return state_.is_team() ? "rank " : "team rank "; }

  Released released() const { return state_.fault().released(call_.name, rank_, rank_kind()); }

  [[noreturn]] void fail(ErrorCode code, const std::string& what) {
    Error error = make_error(code, call_.name, rank_, what);
    state_.fault().abort(state_.team_rank(rank_), code, error.what());
    throw error;
  }

  [[noreturn]] void internal(const std::string& what) const {
    throw make_error(ErrorCode::internal, call_.name, rank_, what);
  }

  // Compares peer's descriptor for this call if it is published yet; returns whether it was.
  bool check_descriptor(int peer) {
    const Descriptor& descriptor = state_.slot(peer).calls[sequence_ % 2];
    if (descriptor.sequence.load(std::memory_order_acquire) != sequence_) return false;
    const std::string difference = first_difference(call_.info, rank_, descriptor.info, peer);
    if (!difference.empty()) fail(ErrorCode::mismatch, concat("ranks disagree at call ", sequence_, ": ", difference));
    me_.checked[static_cast<std::size_t>(peer)] = 1;
    return true;
  }

  // Waits until ready(); between polls: leave if the team aborted, compare peer's descriptor as
  // soon as it appears (a mismatched peer may never produce what we wait for), and fail if peer
  // has left its function (it never will).
  template <class Ready, class Describe>
  void wait_for(int peer, Ready&& ready, Describe&& describe) {
    const auto p = static_cast<std::size_t>(peer);
    WaitingMark mark(state_, rank_, peer);
    wait_until(
        call_.timeout_ms, state_.yields(), ready,
        [&] {
          mark.set();
          if (state_.fault().aborted()) throw released();
          if (me_.checked[p] == 0) check_descriptor(peer);
          if (state_.fault().exited(state_.team_rank(peer)) && !ready()) {
            fail(ErrorCode::mismatch, concat("rank ", peer, " returned from its function without joining call ",
                                             sequence_, " (", call_.name, "); this rank was ", describe()));
          }
        },
        [&]() -> long {
          if (mark.grace()) return call_.timeout_ms;
          fail(ErrorCode::timeout, concat("timed out after ", mark.waited_ms(call_.timeout_ms), " ms ", describe()));
        });
  }

  static constexpr std::size_t kAtEnd = static_cast<std::size_t>(-1);
  static constexpr std::size_t kCompactAt = 32;

  // `step` is the step about to overwrite sent data, or kAtEnd.
  void wait_ack(int peer, std::uint64_t ordinal, std::size_t step) {
    const std::atomic<std::uint64_t>& acks = state_.acks(rank_, peer);
    std::uint64_t seen = me_.acked[static_cast<std::size_t>(peer)];
    wait_for(
        peer,
        [&] {
          seen = acks.load(std::memory_order_acquire);
          return seen >= ordinal;
        },
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

  // Before writing [dst, dst + bytes): every overlapping pending send must have been read.
  void guard_write(std::byte* dst, std::size_t bytes, std::size_t step) {
    if (bytes == 0 || me_.pending.empty()) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(dst);
    const auto end = begin + bytes;
    for (const PendingSend& send : me_.pending) {
      if (send.ordinal <= me_.acked[static_cast<std::size_t>(send.peer)]) continue;
      if (send.begin < end && begin < send.end) wait_ack(send.peer, send.ordinal, step);
    }
    if (me_.pending.size() >= compact_at_) compact();
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

  const std::byte* address(const RankSlot& slot, algo::Span span, std::size_t bytes) const {
    const std::byte* base = span.buffer == algo::Buffer::input    ? slot.input
                            : span.buffer == algo::Buffer::output ? slot.output
                                                                  : slot.scratch;
    if (base == nullptr) {
      if (bytes == 0) return nullptr;
      internal(concat("schedule touches the ", algo::to_string(span.buffer), " buffer, which this call does not have"));
    }
    return base + span.offset * call_.element_size;
  }

  std::byte* mutable_address(algo::Span span, std::size_t bytes) const {
    if (span.buffer == algo::Buffer::input) {
      internal("schedule writes the input buffer");
    }
    return const_cast<std::byte*>(address(mine_, span, bytes));
  }

  const SharedState& state_;
  int rank_;
  RankState& me_;
  const Call& call_;
  RankSlot& mine_;
  std::uint64_t sequence_ = 0;
  std::size_t steps_ = 0;
  std::size_t compact_at_ = kCompactAt;
};

}  // namespace chorus::host::detail
