// chorus::shm::Comm: processes on one machine, talking through one POSIX shared-memory segment per
// communicator. chorus's own schedules (every Algorithm the host backend has) run through the step
// interpreter over per-pair FIFOs (fifo_transport.hpp), so results are bit-identical to host::Comm's
// and mpi::Comm's for the same algorithm.
//
//   auto store = chorus::bootstrap::store_from_environment();          // chorus-run, torchrun
//   chorus::shm::Comm comm(*store, info.rank, info.size);              // or Comm::from_environment()
//   comm.all_reduce(grads.data(), grads.data(), grads.size(), chorus::ReduceOp::avg);
//
// Semantics are the contract's (docs/communicator.md), as mpi::Comm has them:
//   - send is synchronous: it returns once the receiver has taken the whole message;
//   - split(color < 0, key) returns a null communicator (size() == 0, rank() == -1);
//   - a failure mid-call (timeout, mismatch, a dead peer) is written to the segment and releases every
//     rank of the communicator and of every communicator split from the same original; they stay failed;
//   - every wait is bounded by the communicator's timeout (Options::timeout_ms, default
//     CHORUS_TIMEOUT_MS); a dead peer is noticed within about 100 ms of waiting for anything;
//   - a call never keeps a pointer to the caller's buffers after it returns or throws (sends copy into
//     the segment), so buffers may be freed after any chorus::Error.
// One thread uses a communicator at a time. Construction and split are collective. Layout and
// protocol: docs/shm.md.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../algo/build.hpp"
#include "../algo/printer.hpp"
#include "../bootstrap/store.hpp"
#include "../core/algorithm.hpp"
#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../host/tuning.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/call_record.hpp"
#include "../runtime/collective_front.hpp"
#include "../runtime/element_ops.hpp"
#include "../runtime/flight_record_json.hpp"
#include "../runtime/own_record.hpp"
#include "../runtime/flight_recorder.hpp"
#include "../runtime/interpreter.hpp"
#include "../runtime/schedule_cache.hpp"
#include "../runtime/validate.hpp"
#include "endpoint.hpp"
#include "fifo_transport.hpp"
#include "options.hpp"
#include "setup.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm {

class Comm : public runtime::CollectiveFront<Comm> {
 public:
  Comm() = default;  // a null communicator

  // Collective over the `size` processes that construct it with the same store (and, for several
  // communicators on one store, in the same order or with the same Options::key).
  Comm(bootstrap::Store& store, int rank, int size, const Options& options = {})
      : Comm(detail::join(store, rank, size, options), nullptr, rank, options) {}

  int rank() const { return state_ ? state_->endpoint.rank() : -1; }
  int size() const { return state_ ? state_->endpoint.size() : 0; }
  explicit operator bool() const { return state_ != nullptr; }
  // The communicator's wait bound in milliseconds.
  long timeout_ms() const { return state_ ? state_->endpoint.timeout_ms() : 0; }
  // Changes the wait bound of later calls (a framework's per-call timeout); same range as
  // Options::timeout_ms, 0 meaning CHORUS_TIMEOUT_MS. Only the thread that makes calls may change it.
  void set_timeout_ms(long ms) {
    runtime::check_comm("set_timeout_ms", state_ != nullptr);
    Options options;
    options.timeout_ms = ms;
    detail::check_options(options, "set_timeout_ms", rank());
    state_->endpoint.set_timeout_ms(detail::timeout_of(options));
  }
  // Bytes of shared memory this communicator maps (the same on every rank).
  std::size_t segment_bytes() const { return state_ ? state_->endpoint.segment()->bytes() : 0; }

  using runtime::CollectiveFront<Comm>::send;
  using runtime::CollectiveFront<Comm>::recv;

  // Synchronous: returns once `peer` has taken every byte.
  void send(const void* data, std::size_t count, DataType type, int peer) {
    const std::size_t bytes = checked_message("send", data, count, type, peer);
    guarded([&] {
      detail::Endpoint& e = state_->endpoint;
      detail::Fifo& out = e.to(peer);
      const std::uint64_t number = ++state_->sent[static_cast<std::size_t>(peer)];
      const auto* src = static_cast<const std::byte*>(data);
      std::size_t offset = 0;
      do {
        e.wait_for([&] { return out.can_write(); },
                   [&] { return chorus::detail::concat("room in the FIFO to rank ", peer); });
        const std::size_t piece = std::min(out.slot_bytes(), bytes - offset);
        out.write(detail::SlotKind::message, number, bytes, offset, src + offset, piece);
        offset += piece;
      } while (offset < bytes);
      e.wait_for([&] { return out.all_taken(); },
                 [&] { return chorus::detail::concat("rank ", peer, " to receive (send is synchronous)"); });
    });
  }

  void recv(void* data, std::size_t count, DataType type, int peer) {
    const std::size_t bytes = checked_message("recv", data, count, type, peer);
    guarded([&] {
      detail::Endpoint& e = state_->endpoint;
      detail::Fifo& in = e.from(peer);
      const std::uint64_t number = ++state_->received[static_cast<std::size_t>(peer)];
      auto* dst = static_cast<std::byte*>(data);
      std::size_t offset = 0;
      do {
        const detail::SlotHeader* slot = nullptr;
        e.wait_for([&] { return (slot = in.peek()) != nullptr; },
                   [&] { return chorus::detail::concat("a message from rank ", peer); });
        if (slot->kind != detail::SlotKind::message) {
          throw make_error(ErrorCode::mismatch, "recv", e.name(), "rank ", peer, " sent data of a collective (call ",
                           slot->sequence, ") while this rank is in recv");
        }
        if (slot->bytes != bytes || slot->offset != offset || slot->sequence != number) {
          throw make_error(ErrorCode::mismatch, "recv", e.name(), "rank ", peer, " sent ", slot->bytes,
                           " bytes; this recv expects ", bytes);
        }
        if (slot->piece_bytes > 0) std::memcpy(dst + offset, detail::Fifo::payload(slot), slot->piece_bytes);
        offset += slot->piece_bytes;
        in.release();
      } while (offset < bytes);
    });
  }

  // Returns when every rank has called it; bounded like every wait.
  void barrier() {
    runtime::check_comm("barrier", state_ != nullptr);
    runtime::CallDescriptor call;
    call.kind = runtime::CallKind::barrier;
    detail::Endpoint& e = state_->endpoint;
    e.begin("barrier", call);
    guarded([&] { e.finish(); });
  }

  // Every call completes before it returns; like every call, it refuses a null communicator.
  void wait() const { runtime::check_comm("wait", state_ != nullptr); }

  // Fails the communicator on purpose: every rank of its family is released with peer_failed naming
  // this rank, and every later call here throws.
  void abort() {
    runtime::check_comm("abort", state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    e.fail(make_error(ErrorCode::peer_failed, "abort", e.name(), "this rank called abort()"));
  }

  // abort() for another thread: safe while the thread that owns the communicator is inside a call
  // (the failure is one atomic write to the segment, which that call's next poll reads and throws).
  // `why` goes into the report every rank of the family is released with.
  void interrupt(const std::string& why) {
    runtime::check_comm("interrupt", state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    e.fail(make_error(ErrorCode::peer_failed, "interrupt", e.name(), why));
  }

  // This rank's flight record as JSON (the format of host::Comm::dump_trace, one rank); give each rank
  // its own path, chorus-trace-summary merges them.
  void dump_trace(const std::string& path) const {
    runtime::check_comm("dump_trace", state_ != nullptr);
    const detail::Endpoint& e = state_->endpoint;
    runtime::dump_own_record(path, e.recorder(), e.rank(), e.size(), e.comm_name(), e.name());
  }

  // Ranks of equal color form a new communicator (with its own segment), ordered by (key, rank);
  // color < 0 gives a null communicator. Collective.
  Comm split(int color, int key) {
    runtime::check_comm("split", state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    runtime::CallDescriptor call;
    call.kind = runtime::CallKind::split;
    e.begin("split", call);
    guarded([&] { e.finish(); });
    const detail::GroupPlan plan = detail::plan_split(*this, color, key);
    if (color < 0) {
      detail::share_names(*this, std::string());
      return Comm();
    }
    Options options;
    options.timeout_ms = e.timeout_ms();
    options.slot_bytes = e.layout().slot_bytes;
    options.slots = e.layout().slots;
    detail::SegmentPtr segment;
    if (plan.rank == 0) segment = detail::create_segment(plan.size, options, "split", plan.rank);
    const std::vector<std::string> names = detail::share_names(*this, segment ? segment->name() : std::string());
    if (!segment) segment = detail::open_segment(names[static_cast<std::size_t>(plan.leader)], plan.size, "split", plan.rank);
    detail::check_in(*segment, plan.rank, e.timeout_ms(), "split");
    return Comm(std::move(segment), e.family(), plan.rank, options);
  }

 private:
  struct State {
    State(detail::SegmentPtr segment, detail::SegmentPtr family, int rank, long timeout_ms, runtime::CommName name)
        : endpoint(std::move(segment), std::move(family), rank, timeout_ms, std::move(name)),
          sent(static_cast<std::size_t>(endpoint.size())),
          received(static_cast<std::size_t>(endpoint.size())) {}
    detail::Endpoint endpoint;
    std::vector<std::uint64_t> sent;      // point-to-point messages per peer
    std::vector<std::uint64_t> received;
    runtime::ScheduleStore store;
    runtime::ScheduleCache cache;
  };

  Comm(detail::SegmentPtr segment, detail::SegmentPtr family, int rank, const Options& options)
      : state_(std::make_unique<State>(segment, std::move(family), rank, detail::timeout_of(options),
                                       runtime::CommName{segment->name(), detail::comm_number(segment->name())})) {}

  std::size_t checked_message(const char* name, const void* data, std::size_t count, DataType type, int peer) {
    runtime::check_comm(name, state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    const std::size_t bytes = runtime::check_point_to_point(name, e.name(), e.size(), data, count, type, peer);
    e.start(name);
    return bytes;
  }

  // Runs a call's communication; a failure in it releases every peer before it propagates.
  template <class Fn>
  void guarded(Fn&& fn) {
    detail::Endpoint& e = state_->endpoint;
    try {
      fn();
    } catch (const Error& error) {
      e.recorder().end(runtime::CallState::failed);
      e.fail(error);  // no-op when the segment already holds a failure (this rank was released)
      throw e.explained(error);
    } catch (const std::exception& error) {
      e.recorder().end(runtime::CallState::failed);
      e.fail(Error(ErrorCode::internal, error.what()));
      throw;
    }
    e.recorder().end(runtime::CallState::done);
  }

  friend class runtime::CollectiveFront<Comm>;
  template <class T>
  void typed_collective(const runtime::CollectiveArgs& args) {
    collective(args, runtime::element_ops<T>());
  }
  void erased_collective(const runtime::CollectiveArgs& args) { collective(args, runtime::element_ops(args.type)); }

  void collective(const runtime::CollectiveArgs& args, const runtime::ElementOps* ops) {
    const char* name = traits(args.collective).name;
    runtime::check_comm(name, state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    runtime::CheckedCall checked = runtime::check_collective(args, e.name(), e.size());
    runtime::CallDescriptor& call = checked.descriptor;
    call.pattern = args.algorithm != Algorithm::automatic
                       ? algo::pattern_for(args.algorithm)
                       : host::detail::explain_pattern(args.collective, args.count * checked.element_size, e.size(),
                                                       e.size())
                             .pattern;
    e.begin(name, call);
    guarded([&] {
      // Steps no larger than a slot, so receivers read them in place.
      const std::size_t slice = std::max<std::size_t>(1, e.layout().slot_bytes / checked.element_size);
      const algo::Schedule& schedule =
          state_->cache.get(runtime::schedule_key(call, e.size(), slice), state_->store, [&](const algo::Schedule& built) {
            if (e.rank() != 0 || e.log_level() < LogLevel::info) return;
            log(LogLevel::info, "communicator ", e.comm_name().text, ": ", runtime::describe(call), " (",
                args.count * checked.element_size, " B, ", e.size(), " processes)");
            if (e.log_level() >= LogLevel::debug) log(LogLevel::debug, "schedule:\n", algo::to_table(built));
          });
      const runtime::Buffers buffers{checked.uses_send ? static_cast<const std::byte*>(args.send) : nullptr,
                                     checked.uses_recv ? static_cast<std::byte*>(args.recv) : nullptr, nullptr};
      detail::FifoTransport transport(e);
      const auto steps = static_cast<std::int32_t>(schedule.steps[static_cast<std::size_t>(e.rank())].size());
      e.recorder().run(steps);
      runtime::interpret(e.call(), e.rank(), schedule, buffers, runtime::StepMath{checked.element_size, ops, call.op},
                         transport, runtime::RecordSteps{e.recorder()});
      e.recorder().at_step(steps, -1);
      transport.finish();
      e.finish();
    });
    if (traits(args.collective).reduces && call.op == ReduceOp::avg && checked.uses_recv) {
      ops->finish_avg(args.recv, args.count, e.size());
    }
  }

  std::unique_ptr<State> state_;
};

static_assert(check_communicator<Comm>(), "chorus::shm::Comm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::shm
