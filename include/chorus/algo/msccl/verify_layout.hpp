// Where an imported MSCCL program's chunks live, for the verifier: the buffer sizes the collective
// fixes (nchunksperloop = N chunks: allreduce i = o = N, allgather i = N/ngpus and o = N,
// reduce_scatter i = N and o = N/ngpus, alltoall i = o = N; scratch = s_chunks), the in-place
// aliasing (allreduce and alltoall: o is i; allgather: i[c] is o[rank*N/ngpus + c]; reduce_scatter:
// o[c] is i[rank*N/ngpus + c]), and what each output chunk must hold as a multiset of
// (source rank, source input chunk) contributions. See docs/msccl.md.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"
#include "program.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::msccl {

// What one chunk holds: each (source rank, source input chunk) with how many times it was added.
// Empty: nothing written yet (or a chunk that held no contribution).
using Contents = std::map<std::pair<int, int>, int>;

// Contents as text: "{r0.i[1], r1.i[1] x2}", at most `limit` entries shown.
inline std::string describe(const Contents& contents, std::size_t limit = 8) {
  if (contents.empty()) return "nothing";
  std::string text = "{";
  std::size_t shown = 0;
  for (const auto& [source, times] : contents) {
    if (shown == limit) {
      text += chorus::detail::concat(", ... ", contents.size() - limit, " more");
      break;
    }
    if (shown++ > 0) text += ", ";
    text += chorus::detail::concat("r", source.first, ".i[", source.second, "]");
    if (times != 1) text += chorus::detail::concat(" x", times);
  }
  return text + "}";
}

inline void add_into(Contents& into, const Contents& from) {
  for (const auto& [source, times] : from) into[source] += times;
}

// One rank's memory: every buffer chunk mapped to a slot; aliased chunks share a slot.
class RankLayout {
 public:
  RankLayout() = default;
  RankLayout(const Program& program, int rank) {
    const int n = program.nchunksperloop;
    const int per_rank = program.ngpus > 0 ? n / program.ngpus : 0;
    switch (program.coll) {
      case Collective::all_gather: size_[0] = per_rank; size_[1] = n; break;
      case Collective::reduce_scatter: size_[0] = n; size_[1] = per_rank; break;
      default: size_[0] = n; size_[1] = n; break;
    }
    size_[2] = program.gpus[static_cast<std::size_t>(rank)].s_chunks;
    // Slots: input, then output (unless aliased), then scratch.
    base_[0] = 0;
    int next = size_[0];
    if (!program.inplace) {
      base_[1] = next;
      next += size_[1];
    } else if (program.coll == Collective::all_gather) {  // the output holds the slots; input is inside it
      base_[1] = 0;
      base_[0] = rank * per_rank;
      next = size_[1];
    } else if (program.coll == Collective::reduce_scatter) {  // output inside input
      base_[1] = rank * per_rank;
    } else {
      base_[1] = 0;  // same buffer
    }
    base_[2] = next;
    slots_ = next + size_[2];
  }

  int size(Buffer buffer) const { return size_[static_cast<int>(buffer)]; }
  int slots() const { return slots_; }
  // The slot of chunk `index` of `buffer`, -1 when outside the buffer the collective has.
  int slot(Buffer buffer, long long index) const {
    if (index < 0 || index >= size(buffer)) return -1;
    return base_[static_cast<int>(buffer)] + static_cast<int>(index);
  }

 private:
  int size_[3] = {0, 0, 0};
  int base_[3] = {0, 0, 0};
  int slots_ = 0;
};

// What rank `rank`'s output chunk `c` must hold when the collective is done.
inline Contents expected_output(const Program& program, int rank, int c) {
  const int per_rank = program.nchunksperloop / program.ngpus;
  Contents want;
  switch (program.coll) {
    case Collective::all_reduce:
      for (int r = 0; r < program.ngpus; ++r) want[{r, c}] = 1;
      break;
    case Collective::all_gather: want[{c / per_rank, c % per_rank}] = 1; break;
    case Collective::reduce_scatter:
      for (int r = 0; r < program.ngpus; ++r) want[{r, rank * per_rank + c}] = 1;
      break;
    case Collective::all_to_all: want[{c / per_rank, rank * per_rank + c % per_rank}] = 1; break;
    default: break;
  }
  return want;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::msccl
