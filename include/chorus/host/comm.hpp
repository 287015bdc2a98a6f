// chorus::host::Comm: one rank's handle on a communicator of threads. Every collective is an
// algo::Schedule executed zero-copy over shared memory (see executor.hpp); the Comm only checks
// arguments, picks the pattern (tuning.hpp) and fetches the schedule from its cache.
//
// Semantics are NCCL's: in place when send == recv (all_gather: send == recv + rank*send_count;
// reduce_scatter: recv == send + rank*recv_count), avg on integers truncates, all ranks end with
// bit-identical results. Host-backend specifics:
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

#include "../algo/build.hpp"
#include "../core/algorithm.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../core/reduce_op.hpp"
#include "descriptor.hpp"
#include "executor.hpp"
#include "kernels.hpp"
#include "point_to_point.hpp"
#include "rank_state.hpp"
#include "shared_state.hpp"
#include "tuning.hpp"
#include "validate.hpp"

namespace chorus::host {

class Team;
namespace detail {
struct CommAccess;
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

  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, ReduceOp op, Algorithm algorithm = Algorithm::automatic) {
    collective(request<T>("all_reduce", algo::Collective::all_reduce, send, recv, count, op, 0, algorithm));
  }
  template <class T>
  void broadcast(const detail::same_t<T>* send, T* recv, std::size_t count, int root) {
    collective(request<T>("broadcast", algo::Collective::broadcast, send, recv, count, ReduceOp::sum, root));
  }
  template <class T>
  void reduce(const T* send, detail::same_t<T>* recv, std::size_t count, ReduceOp op, int root) {
    collective(request<T>("reduce", algo::Collective::reduce, send, recv, count, op, root));
  }
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t send_count) {
    collective(request<T>("all_gather", algo::Collective::all_gather, send, recv, send_count, ReduceOp::sum, 0));
  }
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t recv_count, ReduceOp op) {
    collective(request<T>("reduce_scatter", algo::Collective::reduce_scatter, send, recv, recv_count, op, 0));
  }
  template <class T>
  void all_to_all(const T* send, T* recv, std::size_t count_per_peer) {
    collective(request<T>("all_to_all", algo::Collective::all_to_all, send, recv, count_per_peer, ReduceOp::sum, 0));
  }

  template <class T>
  void send(const T* data, std::size_t count, int peer) {
    const detail::Message m = message<T>("send", count, peer, data);
    detail::send_message(*state_, m, data);
  }
  template <class T>
  void recv(T* data, std::size_t count, int peer) {
    const detail::Message m = message<T>("recv", count, peer, data);
    detail::recv_message(*state_, m, data);
  }

  // Returns when every rank of the communicator has called it.
  void barrier() {
    detail::check_comm("barrier", state_ != nullptr);
    detail::Call call;
    call.name = "barrier";
    call.info.kind = detail::CallKind::barrier;
    call.timeout_ms = env::timeout_ms();
    detail::Executor executor(*state_, rank_, *me_, call);
    executor.begin();
    executor.finish();
  }

  // MPI_Comm_split: ranks with the same colour form a communicator, ordered by (key, rank here).
  // Collective over this communicator. colour < 0: this rank joins none and gets a null Comm.
  Comm split(int color, int key) {
    detail::check_comm("split", state_ != nullptr);
    const long timeout_ms = env::timeout_ms();
    const int n = state_->size();
    detail::Call call;
    call.name = "split";
    call.info.kind = detail::CallKind::split;
    call.info.color = color;
    call.info.key = key;
    call.timeout_ms = timeout_ms;

    // 1. Exchange (colour, key): every descriptor of this call is readable once finish() returns,
    //    until this rank begins its next call.
    std::vector<int> members;
    std::vector<std::pair<int, int>> keys;  // (key, parent rank) of my colour
    {
      detail::Executor executor(*state_, rank_, *me_, call);
      executor.begin();
      executor.finish();
      if (color >= 0) {
        for (int r = 0; r < n; ++r) {
          const detail::CallInfo& info = r == rank_ ? call.info : executor.peer_info(r);
          if (info.color == color) keys.emplace_back(info.key, r);
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
      state_->slot(rank_).handoff =
          std::make_shared<detail::SharedState>(state_->fault_ptr(), std::move(team_ranks), false);
    }
    phase_barrier(timeout_ms);
    Comm result;
    if (!members.empty()) {
      result.state_ = state_->slot(members.front()).handoff;
      result.rank_ = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
      result.me_ = std::make_unique<detail::RankState>(result.state_->size());
    }
    // 3. Once everyone holds its reference, the leader drops the slot's.
    phase_barrier(timeout_ms);
    if (leader) state_->slot(rank_).handoff.reset();
    return result;
  }

 private:
  friend class Team;
  friend struct detail::CommAccess;

  Comm(std::shared_ptr<detail::SharedState> state, int rank)
      : state_(std::move(state)), rank_(rank), me_(std::make_unique<detail::RankState>(state_->size())) {}

  struct Request {
    const char* name;
    algo::Collective collective;
    DataType type;
    std::size_t element_size;
    const detail::Kernels* kernels;
    const void* send;
    void* recv;
    std::size_t count;
    ReduceOp op;
    int root;
    Algorithm algorithm;
    bool force_pattern = false;  // tests and benchmarks: run `pattern` instead of choosing
    algo::Pattern pattern = algo::Pattern::ring;
  };

  template <class T>
  static Request request(const char* name, algo::Collective collective, const T* send, T* recv, std::size_t count,
                         ReduceOp op, int root, Algorithm algorithm = Algorithm::automatic) {
    return Request{name,       collective, data_type_v<T>, sizeof(T), detail::kernels_for<T>(), send, recv, count,
                   op,         root,       algorithm};
  }

  template <class T>
  detail::Message message(const char* name, std::size_t count, int peer, const void* data) const {
    detail::check_comm(name, state_ != nullptr);
    detail::check_peer(name, rank_, peer, state_->size());
    detail::check_buffer(name, rank_, data, count, "data");
    detail::Message m;
    m.call = name;
    m.rank = rank_;
    m.peer = peer;
    m.type = data_type_v<T>;
    m.count = count;
    m.bytes = detail::checked_bytes(name, rank_, count, 1, sizeof(T));
    m.timeout_ms = env::timeout_ms();
    return m;
  }

  void phase_barrier(long timeout_ms) {
    detail::Call call;
    call.name = "split";
    call.info.kind = detail::CallKind::barrier;
    call.timeout_ms = timeout_ms;
    detail::Executor executor(*state_, rank_, *me_, call);
    executor.begin();
    executor.finish();
  }

  void collective(const Request& req) {
    using algo::Collective;
    detail::check_comm(req.name, state_ != nullptr);
    const int n = state_->size();
    const char* name = req.name;
    const Collective c = req.collective;
    const bool reduces = c == Collective::all_reduce || c == Collective::reduce || c == Collective::reduce_scatter;
    const bool rooted = c == Collective::broadcast || c == Collective::reduce;
    if (reduces) detail::check_op(name, rank_, req.op);
    if (c == Collective::all_reduce) detail::check_algorithm(name, rank_, req.algorithm);
    if (req.force_pattern && !algo::supports(c, req.pattern)) {
      throw make_error(ErrorCode::invalid_argument, name, rank_, "pattern ", algo::to_string(req.pattern),
                       " does not implement ", algo::to_string(c));
    }
    if (rooted) detail::check_root(name, rank_, req.root, n);
    const bool is_root = rooted && rank_ == req.root;
    const auto ranks = static_cast<std::size_t>(n);
    const std::size_t in_factor = c == Collective::reduce_scatter || c == Collective::all_to_all ? ranks : 1;
    const std::size_t out_factor = c == Collective::all_gather || c == Collective::all_to_all ? ranks : 1;
    const std::size_t in_bytes = detail::checked_bytes(name, rank_, req.count, in_factor, req.element_size);
    const std::size_t out_bytes = detail::checked_bytes(name, rank_, req.count, out_factor, req.element_size);
    // broadcast reads send on the root only; reduce writes recv on the root only.
    const bool uses_send = c != Collective::broadcast || is_root;
    const bool uses_recv = c != Collective::reduce || is_root;
    if (uses_send) detail::check_buffer(name, rank_, req.send, req.count, "send");
    if (uses_recv) detail::check_buffer(name, rank_, req.recv, req.count, "recv");

    const auto send_at = reinterpret_cast<std::uintptr_t>(req.send);
    const auto recv_at = reinterpret_cast<std::uintptr_t>(req.recv);
    const std::size_t block_bytes = req.count * req.element_size * static_cast<std::size_t>(rank_);
    bool in_place = false;
    if (req.count > 0 && uses_send && uses_recv) {
      switch (c) {
        case Collective::all_gather: in_place = send_at == recv_at + block_bytes; break;
        case Collective::reduce_scatter: in_place = recv_at == send_at + block_bytes; break;
        default: in_place = send_at == recv_at; break;
      }
      detail::check_overlap(name, rank_, req.send, in_bytes, req.recv, out_bytes, in_place);
    }

    detail::Call call;
    call.name = name;
    call.element_size = req.element_size;
    call.kernels = req.kernels;
    call.timeout_ms = env::timeout_ms();
    detail::CallInfo& info = call.info;
    info.kind = detail::kind_of(c);
    info.type = req.type;
    info.count = req.count;
    info.op = reduces ? req.op : ReduceOp::sum;
    info.root = rooted ? req.root : 0;
    info.pattern = req.force_pattern ? req.pattern
                                     : detail::choose_pattern(c, req.algorithm, req.count * req.element_size, n,
                                                              state_->team_size());
    // Broadcast and reduce schedules read the root's input and write its output element-wise in
    // order, so the out-of-place schedule is also right in place; using it everywhere lets the
    // root choose without the others knowing.
    info.in_place = rooted ? false : in_place;

    detail::ScheduleKey key;
    key.collective = c;
    key.pattern = info.pattern;
    key.ranks = n;
    key.count = req.count;
    key.root = info.root;
    key.in_place = info.in_place;
    key.slice = detail::slice_elements(req.element_size);
    const algo::Schedule& schedule = me_->schedules.get(key, state_->schedules(), [&key, this] {
      algo::Options options;
      options.slice = key.slice;
      options.in_place = key.in_place;
      options.ring_order = state_->ring_order();
      chorus::log(LogLevel::debug, "host: building ", algo::to_string(key.collective), " schedule, pattern ",
          algo::to_string(key.pattern), ", ", key.ranks, " ranks, count ", key.count, key.in_place ? ", in place" : "");
      return algo::build(key.collective, key.pattern, key.ranks, key.count, key.root, options);
    });

    detail::Executor executor(*state_, rank_, *me_, call);
    executor.begin();
    try {
      executor.run(schedule, detail::Buffers{uses_send ? static_cast<const std::byte*>(req.send) : nullptr,
                                             uses_recv ? static_cast<std::byte*>(req.recv) : nullptr});
      executor.finish();
    } catch (const std::exception& e) {
      executor.withdraw(e.what());  // the caller may free its buffers once this returns
      throw;
    }
    if (reduces && req.op == ReduceOp::avg && uses_recv) req.kernels->finish_avg(req.recv, req.count, n);
  }

  std::shared_ptr<detail::SharedState> state_;
  int rank_ = -1;
  std::unique_ptr<detail::RankState> me_;
};

namespace detail {

// For tests and benchmarks: run a collective with a given pattern instead of the tuned choice
// (the public API chooses patterns itself, except all_reduce's Algorithm).
struct CommAccess {
  template <class T>
  static void collective(Comm& comm, algo::Collective collective, algo::Pattern pattern, const T* send, T* recv,
                         std::size_t count, ReduceOp op, int root) {
    Comm::Request request = Comm::request<T>(algo::to_string(collective), collective, send, recv, count, op, root);
    request.force_pattern = true;
    request.pattern = pattern;
    comm.collective(request);
  }
};

}  // namespace detail
}  // namespace chorus::host
