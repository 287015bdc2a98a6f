// Groups of per-rank calls made by one thread (NCCL's ncclGroupStart/End, shaped like nccl/group.hpp):
// inside a group a per-rank view's calls only deposit at their team's rendezvous (rendezvous.hpp) and
// return; the outermost group's end settles them in the order they were made (consecutive send/recv of
// one team as one transfer) and throws the first failure. One thread driving several ranks must use one.
//
//   chorus::cuda::Group group;
//   for (int r = 0; r < n; ++r) team.comm(r).on(stream).all_reduce(x[r], x[r], count, chorus::ReduceOp::sum);
//   group.end();  // throws chorus::Error if a call failed; or team.group([&] { ... })
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {
namespace rendezvous_detail {
struct Job;  // rendezvous.hpp
}  // namespace rendezvous_detail

// What a rank's call throws: kept as code and text, and thrown as a fresh chorus::Error on the rank's own
// thread, so no exception object is shared between threads.
struct Failure {
  bool failed = false;
  ErrorCode code = ErrorCode::internal;
  std::string message;

  static Failure of(const Error& e) { return {true, e.code(), e.what()}; }
  // The exception being handled, whatever it is (a team call may throw std::bad_alloc too).
  static Failure current() {
    try {
      throw;
    } catch (const Error& e) {
      return of(e);
    } catch (const std::exception& e) {
      return {true, ErrorCode::internal, e.what()};
    } catch (...) {
      return {true, ErrorCode::internal, "unknown exception"};
    }
  }
  void raise() const {
    if (failed) throw Error(code, message);
  }
};

// What a Group settles at its end: a rendezvous that holds deposited calls.
class GroupMember {
 public:
  using Batch = std::vector<std::pair<std::shared_ptr<rendezvous_detail::Job>, int>>;  // (job, the rank whose part it is)
  virtual ~GroupMember() = default;
  // Waits (bounded) for the batch's jobs, runs those ready, collects each rank's outcome: the first failure.
  virtual Failure settle(const Batch& batch) = 0;
};

namespace rendezvous_detail {

struct Ticket {
  std::shared_ptr<GroupMember> owner;
  std::shared_ptr<Job> job;
  int rank;
  bool peer;  // a send/recv pair: batched with its neighbours
};

// This thread's open groups: their depth and the calls made inside them, in order.
struct GroupState {
  int depth = 0;
  std::vector<Ticket> tickets;
  static GroupState& here() {
    thread_local GroupState state;
    return state;
  }
};

}  // namespace rendezvous_detail

inline bool in_group() { return rendezvous_detail::GroupState::here().depth > 0; }

inline void group_start() { ++rendezvous_detail::GroupState::here().depth; }

// Closes one level; the outermost settles every call made in the group, in order (consecutive send/recv
// of one team as one transfer), and throws the first failure after settling them all.
inline void group_end() {
  rendezvous_detail::GroupState& state = rendezvous_detail::GroupState::here();
  if (state.depth == 0) throw Error(ErrorCode::invalid_argument, "chorus::cuda::group_end: no group is open on this thread");
  if (--state.depth > 0) return;
  std::vector<rendezvous_detail::Ticket> tickets = std::move(state.tickets);
  state.tickets.clear();
  Failure first;
  for (std::size_t i = 0; i < tickets.size();) {
    GroupMember::Batch batch{{tickets[i].job, tickets[i].rank}};
    std::size_t j = i + 1;
    while (tickets[i].peer && j < tickets.size() && tickets[j].peer && tickets[j].owner == tickets[i].owner) {
      batch.emplace_back(tickets[j].job, tickets[j].rank);
      ++j;
    }
    const Failure failure = tickets[i].owner->settle(batch);
    if (!first.failed) first = failure;
    i = j;
  }
  first.raise();
}

// RAII form: group_start() now, group_end() at end() or, reporting nothing, at destruction (so the
// deposited calls are settled, bounded, on every path).
class Group {
 public:
  Group() { group_start(); }
  ~Group() {
    if (open_) {
      try {
        group_end();
      } catch (...) {
      }
    }
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  void end() {
    open_ = false;
    group_end();
  }

 private:
  bool open_ = true;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
