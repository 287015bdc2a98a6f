// chorus::host::Comm: one rank's handle on a communicator of threads. Every collective is an
// algo::Schedule run by the step interpreter (runtime/interpreter.hpp) over the shared-memory
// transport (zero-copy, shared_memory_transport.hpp); the Comm checks arguments (runtime/
// call_check.hpp), picks the pattern (tuning.hpp) and fetches the schedule from its cache.
//
// It satisfies the communicator contract (core/communicator.hpp, docs/communicator.md): NCCL's
// semantics, typed and type-erased forms of every call, an optional Algorithm on every collective.
// Host-backend specifics:
//   - all_reduce, reduce_scatter, all_gather and all_to_all: every rank must make the same
//     in-place choice (some patterns stage data differently in place); ranks that differ get
//     chorus::Error (mismatch). broadcast and reduce may mix (a non-root's send, or reduce's
//     recv, is ignored and may be null).
//   - send is synchronous (returns once the receiver has the data): two ranks that both send to
//     each other first time out, as MPI_Ssend would deadlock.
//   - split(color < 0, key) returns a null Comm: size() == 0, rank() == -1, and every call on
//     it throws chorus::Error (invalid_argument).
// A Comm is movable, not copyable, and belongs to its rank's thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/communicator.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "../core/config.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/collective_front.hpp"
#include "../runtime/element_ops.hpp"
#include "rank_state.hpp"
#include "shared_state.hpp"

CHORUS_NAMESPACE_BEGIN namespace host {

class Team;
namespace detail {
struct Message;  // point_to_point.hpp
}  // namespace detail

class Comm : public runtime::CollectiveFront<Comm> {
 public:
  Comm() = default;  // a null communicator
  Comm(Comm&&) noexcept = default;
  Comm& operator=(Comm&&) noexcept = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() = default;

  int rank() const { return state_ ? rank_ : -1; }
  int size() const { return state_ ? state_->size() : 0; }
  explicit operator bool() const { return state_ != nullptr; }

  // all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, typed and type-erased, and typed
  // send/recv: runtime::CollectiveFront.
  using runtime::CollectiveFront<Comm>::send;
  using runtime::CollectiveFront<Comm>::recv;
  void send(const void* data, std::size_t count, DataType type, int peer);
  void recv(void* data, std::size_t count, DataType type, int peer);

  // Returns when every rank of the communicator has called it.
  void barrier();

  // Every call completes before it returns (host memory), so there is nothing to wait for; like every
  // call, it refuses a null Comm.
  void wait() const { runtime::check_comm("wait", state_ != nullptr); }

  // MPI_Comm_split: ranks with the same colour form a communicator, ordered by (key, rank here).
  // Collective over this communicator. colour < 0: this rank joins none and gets a null Comm.
  // The new communicator's rings follow this one's ring order, restricted to its members.
  Comm split(int color, int key);

  // This communicator's ring order (empty: 0, 1, ..., size-1); see Team::set_ring_order.
  const std::vector<int>& ring_order() const;

  // Writes every rank's flight record of this communicator (its last CHORUS_TRACE_BUFFER calls) and
  // the desync summary as JSON (docs/debugging.md). Any rank may call it, alone, at any time: e.g.
  // after catching a timeout. Throws chorus::Error when the file cannot be written.
  void dump_trace(const std::string& path) const;

 private:
  friend class Team;
  friend class runtime::CollectiveFront<Comm>;

  Comm(std::shared_ptr<detail::SharedState> state, int rank)
      : state_(std::move(state)), rank_(rank), me_(std::make_unique<detail::RankState>(state_->size())) {}

  long timeout_for(const char* call) const;
  // A call with no steps: publish the descriptor, wait until every peer has published a matching one.
  void synchronise(const char* name, const runtime::CallDescriptor& call, long timeout_ms);
  // send/recv's argument checks; the message they exchange.
  detail::Message checked_message(const char* name, const void* data, std::size_t count, DataType type,
                                  int peer) const;
  // Typed calls, header-only: only T's element functions are compiled into the caller's translation
  // unit (the type-erased entry would compile all ten types'). Compiled mode: libchorus has them all.
  template <class T>
  void typed_collective(const runtime::CollectiveArgs& args) {
#if defined(CHORUS_COMPILED_LIB)
    erased_collective(args);
#else
    collective(args, runtime::element_ops<T>());
#endif
  }
  void erased_collective(const runtime::CollectiveArgs& args);
  void collective(const runtime::CollectiveArgs& args, const runtime::ElementOps* ops);

  std::shared_ptr<detail::SharedState> state_;
  int rank_ = -1;
  std::unique_ptr<detail::RankState> me_;
};

static_assert(check_communicator<Comm>(), "chorus::host::Comm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::host

#if CHORUS_DEFINE_BODIES
#include "comm_inl.hpp"
#endif
