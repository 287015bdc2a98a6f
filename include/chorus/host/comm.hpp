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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/communicator.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/element_ops.hpp"
#include "../runtime/interpreter.hpp"
#include "../runtime/validate.hpp"
#include "peer_wait.hpp"
#include "point_to_point.hpp"
#include "rank_state.hpp"
#include "shared_memory_transport.hpp"
#include "shared_state.hpp"
#include "tuning.hpp"

namespace chorus::host {

class Team;
namespace detail {
// Keeps a parameter out of template argument deduction, so a literal nullptr is accepted where
// the buffer may be null (broadcast's send, reduce's recv on non-roots) and T comes from the other.
template <class T>
struct same {
  using type = T;
};
template <class T>
using same_t = typename same<T>::type;
}  // namespace detail

class Comm {
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

  // Typed collectives: the DataType comes from T.
  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    all_reduce(send, recv, count, data_type_v<T>, op, algorithm);
  }
  template <class T>
  void broadcast(const detail::same_t<T>* send, T* recv, std::size_t count, int root,
                 Algorithm algorithm = Algorithm::automatic) {
    broadcast(send, recv, count, data_type_v<T>, root, algorithm);
  }
  template <class T>
  void reduce(const T* send, detail::same_t<T>* recv, std::size_t count, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic) {
    reduce(send, recv, count, data_type_v<T>, op, root, algorithm);
  }
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t send_count, Algorithm algorithm = Algorithm::automatic) {
    all_gather(send, recv, send_count, data_type_v<T>, algorithm);
  }
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t recv_count, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic) {
    reduce_scatter(send, recv, recv_count, data_type_v<T>, op, algorithm);
  }
  template <class T>
  void all_to_all(const T* send, T* recv, std::size_t count_per_peer, Algorithm algorithm = Algorithm::automatic) {
    all_to_all(send, recv, count_per_peer, data_type_v<T>, algorithm);
  }
  template <class T>
  void send(const T* data, std::size_t count, int peer) {
    send(static_cast<const void*>(data), count, data_type_v<T>, peer);
  }
  template <class T>
  void recv(T* data, std::size_t count, int peer) {
    recv(static_cast<void*>(data), count, data_type_v<T>, peer);
  }

  // Type-erased collectives, as NCCL and MPI take them: `type` says what the buffers hold.
  void all_reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                  Algorithm algorithm = Algorithm::automatic) {
    collective({Collective::all_reduce, type, send, recv, count, op, 0, algorithm});
  }
  void broadcast(const void* send, void* recv, std::size_t count, DataType type, int root,
                 Algorithm algorithm = Algorithm::automatic) {
    collective({Collective::broadcast, type, send, recv, count, ReduceOp::sum, root, algorithm});
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root,
              Algorithm algorithm = Algorithm::automatic) {
    collective({Collective::reduce, type, send, recv, count, op, root, algorithm});
  }
  void all_gather(const void* send, void* recv, std::size_t send_count, DataType type,
                  Algorithm algorithm = Algorithm::automatic) {
    collective({Collective::all_gather, type, send, recv, send_count, ReduceOp::sum, 0, algorithm});
  }
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type, ReduceOp op,
                      Algorithm algorithm = Algorithm::automatic) {
    collective({Collective::reduce_scatter, type, send, recv, recv_count, op, 0, algorithm});
  }
  void all_to_all(const void* send, void* recv, std::size_t count_per_peer, DataType type,
                  Algorithm algorithm = Algorithm::automatic) {
    collective({Collective::all_to_all, type, send, recv, count_per_peer, ReduceOp::sum, 0, algorithm});
  }
  void send(const void* data, std::size_t count, DataType type, int peer) {
    const detail::Message m = message("send", count, type, peer, data);
    detail::send_message(*state_, waiter("send"), m, data);
  }
  void recv(void* data, std::size_t count, DataType type, int peer) {
    const detail::Message m = message("recv", count, type, peer, data);
    detail::recv_message(*state_, waiter("recv"), m, data);
  }

  // Returns when every rank of the communicator has called it.
  void barrier() {
    runtime::check_comm("barrier", state_ != nullptr);
    runtime::CallDescriptor call;
    call.kind = runtime::CallKind::barrier;
    synchronise("barrier", call, env::timeout_ms());
  }

  // MPI_Comm_split: ranks with the same colour form a communicator, ordered by (key, rank here).
  // Collective over this communicator. colour < 0: this rank joins none and gets a null Comm.
  // The new communicator's rings follow this one's ring order, restricted to its members.
  Comm split(int color, int key) {
    runtime::check_comm("split", state_ != nullptr);
    const long timeout_ms = env::timeout_ms();
    const int n = state_->size();
    runtime::CallDescriptor call;
    call.kind = runtime::CallKind::split;
    call.color = color;
    call.key = key;

    // 1. Exchange (colour, key): every descriptor of this call is readable once finish() returns,
    //    until this rank begins its next call.
    std::vector<int> members;
    std::vector<std::pair<int, int>> keys;  // (key, parent rank) of my colour
    {
      detail::SharedMemoryTransport transport(*state_, rank_, *me_, "split", call, timeout_ms);
      transport.begin();
      transport.finish();
      if (color >= 0) {
        for (int r = 0; r < n; ++r) {
          const runtime::CallDescriptor& theirs = r == rank_ ? call : transport.peer_descriptor(r);
          if (theirs.color == color) keys.emplace_back(theirs.key, r);
        }
      }
    }
    std::sort(keys.begin(), keys.end());
    for (const auto& entry : keys) members.push_back(entry.second);
    const bool leader = !members.empty() && members.front() == rank_;

    // 2. The first member creates the shared state and hands it over through its slot.
    if (leader) {
      std::vector<int> team_ranks;
      for (int r : members) team_ranks.push_back(state_->team_rank(r));
      auto child = std::make_shared<detail::SharedState>(state_->fault_ptr(), std::move(team_ranks), false);
      child->set_ring_order(detail::ring_order_of_members(state_->ring_order(), members, n));
      state_->slot(rank_).handoff = std::move(child);
    }
    runtime::CallDescriptor phase;
    phase.kind = runtime::CallKind::barrier;
    synchronise("split", phase, timeout_ms);
    Comm result;
    if (!members.empty()) {
      result.state_ = state_->slot(members.front()).handoff;
      result.rank_ = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
      result.me_ = std::make_unique<detail::RankState>(result.state_->size());
    }
    // 3. Once everyone holds its reference, the leader drops the slot's.
    synchronise("split", phase, timeout_ms);
    if (leader) state_->slot(rank_).handoff.reset();
    return result;
  }

  // This communicator's ring order (empty: 0, 1, ..., size-1); see Team::set_ring_order.
  const std::vector<int>& ring_order() const {
    runtime::check_comm("ring_order", state_ != nullptr);
    return state_->ring_order();
  }

 private:
  friend class Team;

  Comm(std::shared_ptr<detail::SharedState> state, int rank)
      : state_(std::move(state)), rank_(rank), me_(std::make_unique<detail::RankState>(state_->size())) {}

  detail::PeerWaiter waiter(const char* call) const { return detail::PeerWaiter(*state_, call, rank_, env::timeout_ms()); }

  detail::Message message(const char* name, std::size_t count, DataType type, int peer, const void* data) const {
    runtime::check_comm(name, state_ != nullptr);
    runtime::check_type(name, rank_, type);
    runtime::check_peer(name, rank_, peer, state_->size());
    runtime::check_buffer(name, rank_, data, count, "data");
    detail::Message m;
    m.peer = peer;
    m.type = type;
    m.count = count;
    m.bytes = runtime::checked_bytes(name, rank_, count, 1, size_of(type));
    return m;
  }

  // A call with no steps: publish the descriptor, wait until every peer has published a matching one.
  void synchronise(const char* name, const runtime::CallDescriptor& call, long timeout_ms) {
    detail::SharedMemoryTransport transport(*state_, rank_, *me_, name, call, timeout_ms);
    transport.begin();
    transport.finish();
  }

  void collective(const runtime::CollectiveArgs& args) {
    const char* name = traits(args.collective).name;
    runtime::check_comm(name, state_ != nullptr);
    const int n = state_->size();
    runtime::CheckedCall checked = runtime::check_collective(args, rank_, n);
    runtime::CallDescriptor& call = checked.descriptor;
    call.pattern = args.algorithm != Algorithm::automatic
                       ? algo::pattern_for(args.algorithm)
                       : detail::choose_pattern(args.collective, args.count * checked.element_size, n,
                                                state_->team_size());
    const algo::Schedule& schedule = me_->schedules.get(
        runtime::schedule_key(call, n, detail::slice_elements(checked.element_size)), state_->schedules());

    const runtime::ElementOps* ops = runtime::element_ops(args.type);
    const runtime::StepMath math{checked.element_size, ops, call.op};
    const runtime::Buffers buffers{checked.uses_send ? static_cast<const std::byte*>(args.send) : nullptr,
                                   checked.uses_recv ? static_cast<std::byte*>(args.recv) : nullptr, nullptr};
    detail::SharedMemoryTransport transport(*state_, rank_, *me_, name, call, env::timeout_ms());
    transport.begin();
    try {
      runtime::interpret(name, rank_, schedule, buffers, math, transport);
      transport.finish();
    } catch (const std::exception& e) {
      transport.withdraw(e.what());  // the caller may free its buffers once this returns
      throw;
    }
    if (traits(args.collective).reduces && call.op == ReduceOp::avg && checked.uses_recv) {
      ops->finish_avg(args.recv, args.count, n);
    }
  }

  std::shared_ptr<detail::SharedState> state_;
  int rank_ = -1;
  std::unique_ptr<detail::RankState> me_;
};

static_assert(check_communicator<Comm>(), "chorus::host::Comm must satisfy the communicator contract");

}  // namespace chorus::host
