// What a rank says it is doing at a sequence number: the one description of a call. It drives
// three things, so they cannot disagree: the mismatch check (ranks compare descriptors before
// touching each other's memory, so ranks that disagree get chorus::Error instead of reading out
// of bounds or hanging), the schedule key (schedule_key()), and the schedule built for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../algo/schedule.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

// The six collectives (same values as chorus::Collective), then the calls without a schedule.
enum class CallKind : std::uint8_t { all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all, barrier, split };

inline CallKind kind_of(Collective collective) { return static_cast<CallKind>(collective); }
inline bool is_collective(CallKind kind) { return static_cast<int>(kind) < kCollectiveCount; }

inline const char* to_string(CallKind kind) {
  if (is_collective(kind)) return chorus::to_string(static_cast<Collective>(kind));
  return kind == CallKind::barrier ? "barrier" : kind == CallKind::split ? "split" : "unknown";
}

// Fields a call does not use stay at their defaults, so a plain comparison is right for all kinds.
struct CallDescriptor {
  CallKind kind = CallKind::barrier;
  DataType type = DataType::uint8;
  std::size_t count = 0;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  algo::Pattern pattern = algo::Pattern::ring;
  // Ranks must agree on it where the schedule depends on it; rooted collectives keep it false
  // (their schedules are right either way, so the root may choose alone).
  bool in_place = false;
  // split's payload: exchanged, not compared.
  int color = 0;
  int key = 0;

  Collective collective() const { return static_cast<Collective>(kind); }
};

// "" when the two agree, else the first differing field with both values, e.g.
// "count 12 on rank 0, 13 on rank 2".
inline std::string first_difference(const CallDescriptor& mine, int rank, const CallDescriptor& theirs, int peer) {
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

// What the schedule of a collective call depends on: the descriptor's collective, pattern, count,
// root and in-place choice, the communicator's size, and the backend's pipelining slice (in
// elements, so it follows the element size). The communicator's ring order is not in the key:
// changing it empties the communicator's schedule store.
struct ScheduleKey {
  Collective collective = Collective::all_reduce;
  algo::Pattern pattern = algo::Pattern::ring;
  int ranks = 1;
  std::size_t count = 0;
  int root = 0;
  bool in_place = false;
  std::size_t slice = 0;

  friend bool operator==(const ScheduleKey& a, const ScheduleKey& b) {
    return a.collective == b.collective && a.pattern == b.pattern && a.ranks == b.ranks && a.count == b.count &&
           a.root == b.root && a.in_place == b.in_place && a.slice == b.slice;
  }
  friend bool operator!=(const ScheduleKey& a, const ScheduleKey& b) { return !(a == b); }
};

inline ScheduleKey schedule_key(const CallDescriptor& call, int ranks, std::size_t slice) {
  ScheduleKey key;
  key.collective = call.collective();
  key.pattern = call.pattern;
  key.ranks = ranks;
  key.count = call.count;
  key.root = call.root;
  key.in_place = call.in_place;
  key.slice = slice;
  return key;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
