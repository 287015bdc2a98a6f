// A second communicator built only from chorus's backend-neutral pieces, for tests: ranks are
// threads, and bytes move by copying through per-pair message queues (as MPI moves them), not by
// reading peers' memory as the host backend does. It runs the same schedules through the same step
// interpreter (runtime/interpreter.hpp) with its own transport, so it checks that the seam is
// real, and generic tests run on it and on host::Comm alike. No mismatch detection and no fault
// propagation beyond a bounded wait: it is a fake, not a backend. Its argument checks are the
// backends' (runtime/call_check.hpp), so a test of the shared checks can run on it too.
#pragma once

#include <chorus/algo/build.hpp>
#include <chorus/core/communicator.hpp>
#include <chorus/runtime/call_check.hpp>
#include <chorus/runtime/collective_front.hpp>
#include <chorus/runtime/element_ops.hpp>
#include <chorus/runtime/interpreter.hpp>
#include <chorus/runtime/schedule_cache.hpp>
#include <chorus/runtime/validate.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace mailbox {

using Bytes = std::vector<std::byte>;

// What the ranks of one communicator share.
struct World {
  explicit World(int size)
      : size(size),
        collective_queues(static_cast<std::size_t>(size * size)),
        message_queues(static_cast<std::size_t>(size * size)) {}
  int size;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::deque<Bytes>> collective_queues;  // [from * size + to]
  std::vector<std::deque<Bytes>> message_queues;     // send/recv, apart from collectives
  std::map<std::pair<int, int>, std::shared_ptr<World>> children;  // split: (split number, colour)
  chorus::runtime::ScheduleStore schedules;
};

constexpr auto kTimeout = std::chrono::seconds(20);

// Blocks until queue `q` has a message, then takes it; a bounded wait.
inline Bytes take(World& world, std::deque<Bytes>& q, const char* call, int rank, int peer) {
  std::unique_lock<std::mutex> lock(world.mutex);
  if (!world.changed.wait_for(lock, kTimeout, [&] { return !q.empty(); })) {
    throw chorus::make_error(chorus::ErrorCode::timeout, call, rank, "no message from rank ", peer);
  }
  Bytes message = std::move(q.front());
  q.pop_front();
  return message;
}

inline void put(World& world, std::deque<Bytes>& q, const std::byte* data, std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(world.mutex);
    q.emplace_back(data, data + bytes);
  }
  world.changed.notify_all();
}

// The interpreter's transport: a send copies, so nothing in flight ever reads this rank's memory.
class QueueTransport {
 public:
  QueueTransport(World& world, const char* call, int rank) : world_(world), call_(call), rank_(rank) {}

  chorus::runtime::Buffers attach(const chorus::algo::Schedule& schedule, chorus::runtime::Buffers caller,
                                  std::size_t element_size) {
    scratch_.resize(schedule.scratch_count * element_size);
    caller.scratch = scratch_.empty() ? nullptr : scratch_.data();
    return caller;
  }
  void send(std::size_t, const chorus::algo::Step& step, const std::byte* src, std::size_t bytes) {
    put(world_, queue(rank_, step.peer), src, bytes);
  }
  const std::byte* receive(std::size_t, const chorus::algo::Step& step, std::size_t bytes) {
    current_ = take(world_, queue(step.peer, rank_), call_, rank_, step.peer);
    if (current_.size() != bytes) {
      throw chorus::make_error(chorus::ErrorCode::internal, call_, rank_, "got ", current_.size(), " bytes from rank ",
                               step.peer, ", expected ", bytes);
    }
    return current_.data();
  }
  void received(std::size_t, const chorus::algo::Step&, std::size_t) {}
  void before_write(std::size_t, std::byte*, std::size_t) {}

 private:
  std::deque<Bytes>& queue(int from, int to) {
    return world_.collective_queues[static_cast<std::size_t>(from * world_.size + to)];
  }
  World& world_;
  const char* call_;
  int rank_;
  Bytes scratch_;
  Bytes current_;
};

class Comm : public chorus::runtime::CollectiveFront<Comm> {
 public:
  Comm(std::shared_ptr<World> world, int rank) : world_(std::move(world)), rank_(rank) {}
  Comm(Comm&&) noexcept = default;  // the moved-from Comm is null: every call on it throws
  Comm& operator=(Comm&&) noexcept = default;

  int rank() const { return world_ ? rank_ : -1; }
  int size() const { return world_ ? world_->size : 0; }

  // The collectives, typed and type-erased, and typed send/recv: the same front as chorus's own backends.
  using chorus::runtime::CollectiveFront<Comm>::send;
  using chorus::runtime::CollectiveFront<Comm>::recv;

  void send(const void* data, std::size_t count, chorus::DataType type, int peer) {
    const std::size_t bytes = checked_message("send", data, count, type, peer);
    put(*world_, world_->message_queues[index(rank_, peer)], static_cast<const std::byte*>(data), bytes);
  }
  void recv(void* data, std::size_t count, chorus::DataType type, int peer) {
    const std::size_t bytes = checked_message("recv", data, count, type, peer);
    const Bytes message = take(*world_, world_->message_queues[index(peer, rank_)], "recv", rank_, peer);
    if (message.size() != bytes) {
      throw chorus::make_error(chorus::ErrorCode::mismatch, "recv", rank_, "expected ", bytes, " bytes from rank ", peer,
                               ", got ", message.size());
    }
    std::copy(message.begin(), message.end(), static_cast<std::byte*>(data));
  }

  // Calls complete on return (host memory): nothing to wait for, but a null Comm is refused.
  void wait() const { chorus::runtime::check_comm("wait", world_ != nullptr); }

  void barrier() {
    std::uint8_t token = 0;
    all_reduce(&token, &token, 1, chorus::ReduceOp::sum);
  }

  Comm split(int color, int key) {
    const int n = size();
    std::vector<std::int32_t> mine = {color, key}, all(2 * static_cast<std::size_t>(n));
    all_gather(mine.data(), all.data(), 2);
    const int number = splits_++;
    std::vector<std::pair<int, int>> members;  // (key, rank)
    for (int r = 0; r < n; ++r) {
      if (all[2 * static_cast<std::size_t>(r)] == color) members.emplace_back(all[2 * static_cast<std::size_t>(r) + 1], r);
    }
    std::sort(members.begin(), members.end());
    int new_rank = 0;
    while (members[static_cast<std::size_t>(new_rank)].second != rank_) ++new_rank;
    std::shared_ptr<World> child;
    {
      std::lock_guard<std::mutex> lock(world_->mutex);
      auto& slot = world_->children[{number, color}];
      if (!slot) slot = std::make_shared<World>(static_cast<int>(members.size()));
      child = slot;
    }
    return Comm(std::move(child), new_rank);
  }

 private:
  std::size_t index(int from, int to) const { return static_cast<std::size_t>(from * world_->size + to); }

  std::size_t checked_message(const char* name, const void* data, std::size_t count, chorus::DataType type, int peer) const {
    chorus::runtime::check_comm(name, world_ != nullptr);
    return chorus::runtime::check_point_to_point(name, rank_, world_->size, data, count, type, peer);
  }

  friend class chorus::runtime::CollectiveFront<Comm>;
  template <class T>
  void typed_collective(const chorus::runtime::CollectiveArgs& args) {
    collective(args);
  }
  void erased_collective(const chorus::runtime::CollectiveArgs& args) { collective(args); }
  void collective(const chorus::runtime::CollectiveArgs& args) {
    chorus::runtime::check_comm(chorus::traits(args.collective).name, world_ != nullptr);
    const int n = size();
    chorus::runtime::CheckedCall checked = chorus::runtime::check_collective(args, rank_, n);
    chorus::runtime::CallDescriptor& call = checked.descriptor;
    call.pattern = args.algorithm != chorus::Algorithm::automatic ? chorus::algo::pattern_for(args.algorithm)
                                                                  : default_pattern(args.collective);
    const chorus::algo::Schedule& schedule = cache_.get(chorus::runtime::schedule_key(call, n, 0), world_->schedules);
    const chorus::runtime::ElementOps* ops = chorus::runtime::element_ops(args.type);
    QueueTransport transport(*world_, chorus::traits(args.collective).name, rank_);
    chorus::runtime::interpret(
        chorus::traits(args.collective).name, rank_, schedule,
        chorus::runtime::Buffers{checked.uses_send ? static_cast<const std::byte*>(args.send) : nullptr,
                                 checked.uses_recv ? static_cast<std::byte*>(args.recv) : nullptr, nullptr},
        chorus::runtime::StepMath{checked.element_size, ops, call.op}, transport);
    if (chorus::traits(args.collective).reduces && call.op == chorus::ReduceOp::avg && checked.uses_recv) {
      ops->finish_avg(args.recv, args.count, n);
    }
  }

  // Patterns that differ from the host backend's usual choices, so generic tests see others too.
  static chorus::algo::Pattern default_pattern(chorus::Collective collective) {
    switch (collective) {
      case chorus::Collective::all_reduce: return chorus::algo::Pattern::halving_doubling;
      case chorus::Collective::reduce_scatter:
      case chorus::Collective::all_gather: return chorus::algo::Pattern::ring;
      case chorus::Collective::broadcast:
      case chorus::Collective::reduce: return chorus::algo::Pattern::chain;
      case chorus::Collective::all_to_all: return chorus::algo::Pattern::pairwise;
    }
    return chorus::algo::Pattern::ring;
  }

  std::shared_ptr<World> world_;
  int rank_;
  chorus::runtime::ScheduleCache cache_;
  int splits_ = 0;
};

static_assert(chorus::check_communicator<Comm>(), "the mailbox communicator satisfies the contract");

// Runs fn(Comm&) on `size` threads; rethrows the first exception. A stuck run ends by the
// bounded waits above.
template <class Fn>
void run(int size, Fn&& fn) {
  auto world = std::make_shared<World>(size);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        Comm comm(world, r);
        fn(comm);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace mailbox
