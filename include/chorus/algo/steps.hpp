// Building blocks every schedule generator shares: argument checks, the ring order, a step-list
// builder, and the rank-order fold that lets several ranks compute bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "chunking.hpp"
#include "schedule.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

inline Span input_at(std::size_t offset) { return Span{Buffer::input, offset}; }
inline Span output_at(std::size_t offset) { return Span{Buffer::output, offset}; }
inline Span scratch_at(std::size_t offset) { return Span{Buffer::scratch, offset}; }

// Appends to one rank's step list; one member per Op, so generators read like the algorithm.
class StepList {
 public:
  explicit StepList(std::vector<Step>& steps) : steps_(steps) {}

  void send(int peer, std::size_t count, Span src) { steps_.push_back(make(Op::send, peer, count, src, src)); }
  void recv_copy(int peer, std::size_t count, Span dst) {
    steps_.push_back(make(Op::recv_copy, peer, count, dst, dst));
  }
  // dst = combine(local, received): the local operand is the left one.
  void recv_reduce(int peer, std::size_t count, Span local, Span dst) {
    steps_.push_back(make(Op::recv_reduce, peer, count, local, dst));
  }
  void copy(std::size_t count, Span src, Span dst) { steps_.push_back(make(Op::copy, -1, count, src, dst)); }
  // dst = combine(dst, src).
  void reduce(std::size_t count, Span src, Span dst) { steps_.push_back(make(Op::reduce, -1, count, src, dst)); }

 private:
  static Step make(Op op, int peer, std::size_t count, Span src, Span dst) {
    Step step;
    step.op = op;
    step.peer = peer;
    step.count = count;
    step.src = src;
    step.dst = dst;
    return step;
  }
  std::vector<Step>& steps_;
};

// "chorus::algo::<generator>: <parts...>", the shape of every argument error a generator throws.
template <class... Parts>
Error generator_error(const char* generator, const Parts&... parts) {
  return Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::algo::", generator, ": ", parts...));
}

// An empty schedule with one step list per rank, after the checks every generator needs.
inline Schedule make_schedule(const char* generator, Collective collective, Pattern pattern, int ranks,
                              std::size_t count, int root, const Options& options) {
  if (ranks < 1) throw generator_error(generator, "ranks must be at least 1, got ", ranks);
  const bool rooted = traits(collective).rooted;
  if (rooted && (root < 0 || root >= ranks)) {
    throw generator_error(generator, "root ", root, " is not a rank of ", ranks);
  }
  // Input or output holds n*count elements for some collectives; that product must fit.
  if (count > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(ranks)) {
    throw generator_error(generator, "count ", count, " times ", ranks, " ranks overflows size_t");
  }
  Schedule schedule;
  schedule.collective = collective;
  schedule.pattern = pattern;
  schedule.ranks = ranks;
  schedule.count = count;
  schedule.root = rooted ? root : 0;
  schedule.in_place = options.in_place;
  schedule.steps.resize(static_cast<std::size_t>(ranks));
  return schedule;
}

// Ranks laid out on a ring: position p holds rank order[p]. Positions wrap around.
class Ring {
 public:
  Ring(const char* generator, int ranks, const std::vector<int>& order) : order_(order), position_(ranks, -1) {
    if (order_.empty()) {
      for (int rank = 0; rank < ranks; ++rank) order_.push_back(rank);
    }
    if (order_.size() != static_cast<std::size_t>(ranks)) {
      throw generator_error(generator, "ring_order has ", order_.size(), " entries for ", ranks, " ranks");
    }
    for (int p = 0; p < ranks; ++p) {
      const int rank = order_[p];
      if (rank < 0 || rank >= ranks || position_[rank] != -1) {
        throw generator_error(generator, "ring_order is not a permutation of 0..", ranks - 1,
                                      " (entry ", p, " is ", rank, ")");
      }
      position_[rank] = p;
    }
  }
  int size() const { return static_cast<int>(order_.size()); }
  int rank_at(int position) const { return order_[mod(position, size())]; }
  int position_of(int rank) const { return position_[rank]; }

 private:
  std::vector<int> order_;
  std::vector<int> position_;
};

// Folds every rank's contribution to a range into `dst` in rank order, acc = x0, then
// acc = combine(acc, x_p) for p = 1..n-1, so every rank that runs it computes the same expression
// bit for bit. `own` is where this rank's contribution lives; every peer p must send its
// contribution to this rank (the next message from p to this rank is the one folded).
// `own` must not overlap `dst` unless rank == 0 (dst is written before own is read otherwise).
inline void fold_in_rank_order(StepList& list, int rank, int ranks, std::size_t count, Span own, Span dst) {
  if (rank == 0) {
    list.copy(count, own, dst);
  } else {
    list.recv_copy(0, count, dst);
  }
  for (int peer = 1; peer < ranks; ++peer) {
    if (peer == rank) {
      list.reduce(count, own, dst);
    } else {
      list.recv_reduce(peer, count, dst, dst);
    }
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
