// The schedule: an algorithm as data. For every rank an ordered list of steps; a step sends a
// range to a peer, receives a range from a peer (copying or reducing it), or copies/reduces
// locally. Schedules know nothing of types, threads or devices: counts are in elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// The collectives and their facts live in core (collective.hpp); algo uses them unqualified.
using chorus::Collective;
using chorus::to_string;

// Communication patterns: an Algorithm other than automatic, resolved. all_reduce: ring, tree,
// halving_doubling, one_shot, two_shot. reduce_scatter, all_gather: ring, direct. broadcast, reduce:
// chain, binomial. all_to_all: pairwise. Same order as Algorithm after `automatic`.
enum class Pattern { ring, tree, halving_doubling, one_shot, two_shot, direct, chain, binomial, pairwise };

inline constexpr int kPatternCount = 9;

inline Algorithm algorithm_of(Pattern pattern) { return static_cast<Algorithm>(static_cast<int>(pattern) + 1); }

inline const char* to_string(Pattern pattern) {
  switch (pattern) {
    case Pattern::ring: return "ring";
    case Pattern::tree: return "tree";
    case Pattern::halving_doubling: return "halving_doubling";
    case Pattern::one_shot: return "one_shot";
    case Pattern::two_shot: return "two_shot";
    case Pattern::direct: return "direct";
    case Pattern::chain: return "chain";
    case Pattern::binomial: return "binomial";
    case Pattern::pairwise: return "pairwise";
  }
  return "unknown";
}

// The three per-rank buffers a step may touch. Their sizes, in elements (n ranks, c = count):
//   collective       input   output  | in place (same memory)
//   all_reduce       c       c       | input == output
//   reduce_scatter   n*c     c       | output == input + rank*c
//   all_gather       c       n*c     | input == output + rank*c
//   broadcast        c       c       | input == output; input is read on the root only
//   reduce           c       c       | input == output; output is written on the root only
//   all_to_all       n*c     n*c     | input == output
//   scratch: Schedule::scratch_count elements, private to the rank, readable by peers it sends to.
enum class Buffer : std::uint8_t { input, output, scratch };

inline const char* to_string(Buffer buffer) {
  switch (buffer) {
    case Buffer::input: return "in";
    case Buffer::output: return "out";
    case Buffer::scratch: return "scr";
  }
  return "?";
}

struct Span {
  Buffer buffer = Buffer::input;
  std::size_t offset = 0;  // elements
};

enum class Op : std::uint8_t {
  send,         // make src[0, count) available to peer; does not wait for the peer
  recv_copy,    // dst[i] = peer's sent[i]
  recv_reduce,  // dst[i] = combine(src[i], peer's sent[i])   (src is this rank's local operand)
  copy,         // dst[i] = src[i]                            (both this rank's buffers)
  reduce,       // dst[i] = combine(dst[i], src[i])           (both this rank's buffers)
};

inline const char* to_string(Op op) {
  switch (op) {
    case Op::send: return "send";
    case Op::recv_copy: return "recv";
    case Op::recv_reduce: return "recv+reduce";
    case Op::copy: return "copy";
    case Op::reduce: return "reduce";
  }
  return "?";
}

inline bool is_recv(Op op) { return op == Op::recv_copy || op == Op::recv_reduce; }
inline bool writes(Op op) { return op != Op::send; }

struct Step {
  Op op = Op::send;
  int peer = -1;          // the other rank for send/recv; -1 for local steps
  std::size_t count = 0;  // elements
  Span src{};             // send: published range; copy/reduce: source; recv_reduce: local operand
  Span dst{};             // every op but send: destination
  // Filled by link(): for a recv, the index of the matching send in the peer's step list; for a
  // send, its 1-based ordinal among this rank's sends to that peer (the receiver acknowledges
  // sends in that order, so "ordinal k consumed" means the peer has read this range).
  std::uint32_t match = 0;
};

struct Options {
  // Pipelining granularity in elements: ranges longer than this are cut into slices that move
  // through the pattern one after another. 0 leaves each chunk whole.
  std::size_t slice = 0;
  // Ring order (a permutation of 0..n-1) for ring and chain patterns; empty = 0, 1, ..., n-1.
  // A topology search supplies one that keeps neighbours on the fastest links.
  std::vector<int> ring_order;
  // Whether the caller's buffers alias as described above. Patterns whose out-of-place form
  // would overwrite data still to be sent emit a different step order when this is set.
  bool in_place = false;
};

struct Schedule {
  Collective collective = Collective::all_reduce;
  Pattern pattern = Pattern::ring;
  int ranks = 1;
  std::size_t count = 0;  // as passed to the collective call (see the buffer table)
  int root = 0;           // broadcast and reduce only
  bool in_place = false;
  std::size_t scratch_count = 0;
  std::vector<std::vector<Step>> steps;  // steps[rank]

  std::size_t input_count() const { return send_count(collective, count, ranks); }
  std::size_t output_count() const { return recv_count(collective, count, ranks); }
};

// Fills Step::match by pairing the k-th send from p to q with the k-th recv at q from p.
// Throws chorus::Error (code internal) if the pairs do not line up: a generator bug.
CHORUS_FUNC void link(Schedule& schedule);

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC void link(Schedule& schedule) {
  const int n = schedule.ranks;
  if (n < 1 || schedule.steps.size() != static_cast<std::size_t>(n)) {
    throw Error(ErrorCode::internal, chorus::detail::concat("chorus::algo::link: schedule for ", n, " ranks has ",
                                                            schedule.steps.size(), " step lists"));
  }
  const auto pair = [n](int from, int to) { return static_cast<std::size_t>(from) * n + to; };
  std::vector<std::vector<std::uint32_t>> sends(static_cast<std::size_t>(n) * n);
  for (int rank = 0; rank < n; ++rank) {
    auto& steps = schedule.steps[rank];
    std::vector<std::uint32_t> ordinal(n, 0);
    for (std::uint32_t i = 0; i < steps.size(); ++i) {
      Step& step = steps[i];
      if (step.op != Op::send) continue;
      if (step.peer < 0 || step.peer >= n || step.peer == rank) {
        throw Error(ErrorCode::internal, chorus::detail::concat("chorus::algo::link: rank ", rank, " step ", i,
                                                        " sends to invalid peer ", step.peer));
      }
      step.match = ++ordinal[step.peer];
      sends[pair(rank, step.peer)].push_back(i);
    }
  }
  for (int rank = 0; rank < n; ++rank) {
    auto& steps = schedule.steps[rank];
    std::vector<std::size_t> taken(n, 0);
    for (std::uint32_t i = 0; i < steps.size(); ++i) {
      Step& step = steps[i];
      if (!is_recv(step.op)) continue;
      if (step.peer < 0 || step.peer >= n || step.peer == rank) {
        throw Error(ErrorCode::internal, chorus::detail::concat("chorus::algo::link: rank ", rank, " step ", i,
                                                        " receives from invalid peer ", step.peer));
      }
      const auto& queue = sends[pair(step.peer, rank)];
      const std::size_t k = taken[step.peer]++;
      if (k >= queue.size()) {
        throw Error(ErrorCode::internal,
                    chorus::detail::concat("chorus::algo::link: rank ", rank, " step ", i, " receives message ", k + 1,
                                   " from rank ", step.peer, ", which sends only ", queue.size()));
      }
      const Step& send = schedule.steps[step.peer][queue[k]];
      if (send.count != step.count) {
        throw Error(ErrorCode::internal,
                    chorus::detail::concat("chorus::algo::link: rank ", rank, " step ", i, " receives ", step.count,
                                   " elements but rank ", step.peer, " step ", queue[k], " sends ", send.count));
      }
      step.match = queue[k];
    }
    for (int peer = 0; peer < n; ++peer) {
      if (peer != rank && taken[peer] != sends[pair(peer, rank)].size()) {
        throw Error(ErrorCode::internal,
                    chorus::detail::concat("chorus::algo::link: rank ", peer, " sends ", sends[pair(peer, rank)].size(),
                                   " messages to rank ", rank, ", which receives ", taken[peer]));
      }
    }
  }
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
