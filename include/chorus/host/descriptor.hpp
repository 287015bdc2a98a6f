// What a rank says it is doing at a sequence number. Every rank publishes one per call; peers
// compare before reading each other's memory, so ranks that disagree get chorus::Error instead
// of reading out of bounds or hanging.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../algo/schedule.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

namespace chorus::host::detail {

enum class CallKind : std::uint8_t { all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all, barrier, split };

inline const char* to_string(CallKind kind) {
  switch (kind) {
    case CallKind::all_reduce: return "all_reduce";
    case CallKind::reduce_scatter: return "reduce_scatter";
    case CallKind::all_gather: return "all_gather";
    case CallKind::broadcast: return "broadcast";
    case CallKind::reduce: return "reduce";
    case CallKind::all_to_all: return "all_to_all";
    case CallKind::barrier: return "barrier";
    case CallKind::split: return "split";
  }
  return "unknown";
}

inline CallKind kind_of(algo::Collective collective) {
  switch (collective) {
    case algo::Collective::all_reduce: return CallKind::all_reduce;
    case algo::Collective::reduce_scatter: return CallKind::reduce_scatter;
    case algo::Collective::all_gather: return CallKind::all_gather;
    case algo::Collective::broadcast: return CallKind::broadcast;
    case algo::Collective::reduce: return CallKind::reduce;
    case algo::Collective::all_to_all: return CallKind::all_to_all;
  }
  return CallKind::barrier;
}

// Fields a call does not use stay at their defaults, so a plain comparison is right for all kinds.
struct CallInfo {
  CallKind kind = CallKind::barrier;
  DataType type = DataType::uint8;
  std::size_t count = 0;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  algo::Pattern pattern = algo::Pattern::ring;
  // Ranks must agree on it where the schedule depends on it; broadcast and reduce keep it false
  // (see Comm).
  bool in_place = false;
  // split's payload: exchanged, not compared.
  int color = 0;
  int key = 0;
};

// "" when the two agree, else the first differing field with both values, e.g.
// "count 12 on rank 0, 13 on rank 2".
inline std::string first_difference(const CallInfo& mine, int rank, const CallInfo& theirs, int peer) {
  const auto differ = [rank, peer](const char* field, const auto& a, const auto& b) {
    return chorus::detail::concat(field, " ", a, " on rank ", rank, ", ", b, " on rank ", peer);
  };
  if (mine.kind != theirs.kind) return differ("collective", to_string(mine.kind), to_string(theirs.kind));
  if (mine.type != theirs.type) return differ("type", to_string(mine.type), to_string(theirs.type));
  if (mine.count != theirs.count) return differ("count", mine.count, theirs.count);
  if (mine.op != theirs.op) return differ("op", to_string(mine.op), to_string(theirs.op));
  if (mine.root != theirs.root) return differ("root", mine.root, theirs.root);
  if (mine.pattern != theirs.pattern) {
    return differ("algorithm", algo::to_string(mine.pattern), algo::to_string(theirs.pattern));
  }
  if (mine.in_place != theirs.in_place) {
    return differ("in-place", mine.in_place ? "yes" : "no", theirs.in_place ? "yes" : "no");
  }
  return {};
}

// One entry of a rank's two-entry descriptor ring (indexed by sequence % 2). `info` is written
// before `sequence` is released; a peer reads it only after acquiring the sequence it expects.
// Two entries suffice: a rank cannot finish call s+1 before every peer has entered it, that is,
// before every peer is done with call s.
struct Descriptor {
  std::atomic<std::uint64_t> sequence{0};
  CallInfo info{};
};

}  // namespace chorus::host::detail
