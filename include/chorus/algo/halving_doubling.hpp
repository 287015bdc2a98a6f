// Rabenseifner's all_reduce: recursive-halving reduce-scatter, then recursive-doubling
// all-gather, over the largest power of two p <= n. Each of the log2(p) steps exchanges with one
// partner, halving (then doubling) the range a rank is responsible for: log latency and the
// ring's bandwidth term. When n is not a power of two the first 2(n-p) ranks pair up: the even
// one of each pair folds its whole buffer into the odd one before, and is sent the result after.
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "chunking.hpp"
#include "schedule.hpp"
#include "steps.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

// The largest power of two not above n (n >= 1).
CHORUS_HOST_DEVICE constexpr int floor_power_of_two(int n) {
  int p = 1;
  while (p <= n - p) p *= 2;  // p*2 <= n without overflow
  return p;
}

// Rank -> index among the p ranks that take part in the halving and doubling, or -1 for the even
// half of a folded pair. `extra` = n - p.
CHORUS_HOST_DEVICE constexpr int hd_virtual_rank(int rank, int extra) {
  if (rank < 2 * extra) return rank % 2 == 1 ? rank / 2 : -1;
  return rank - extra;
}
CHORUS_HOST_DEVICE constexpr int hd_real_rank(int virtual_rank, int extra) {
  return virtual_rank < extra ? 2 * virtual_rank + 1 : virtual_rank + extra;
}

// Partial sums stay in the output range they finish in and every exchange reads straight out of
// the partner's buffer, so no scratch is needed: a range a rank gives away is never written again
// until the all-gather returns it (after the partner has read it).
CHORUS_FUNC Schedule halving_doubling_all_reduce(int ranks, std::size_t count, const Options& options = {});

#if CHORUS_DEFINE_BODIES
CHORUS_FUNC Schedule halving_doubling_all_reduce(int ranks, std::size_t count, const Options& options) {
  Schedule schedule = make_schedule("halving_doubling_all_reduce", Collective::all_reduce,
                                    Pattern::halving_doubling, ranks, count, 0, options);
  const int n = ranks;
  const int p = floor_power_of_two(n);
  const int extra = n - p;
  // The buffer is processed in segments so no message exceeds about Options::slice elements.
  const std::size_t segments = slice_count(chunk_range(count, static_cast<std::size_t>(p), 0).count, options.slice);
  for (int rank = 0; rank < n; ++rank) {
    StepList list(schedule.steps[rank]);
    const int v = hd_virtual_rank(rank, extra);
    for (std::size_t g = 0; g < segments; ++g) {
      const Range segment = slice_of(Range{0, count}, segments, g);
      // Elements of chunks [lo, hi) of this segment, split into p chunks.
      const auto chunks = [&](int lo, int hi) {
        const Range first = chunk_range(segment.count, static_cast<std::size_t>(p), static_cast<std::size_t>(lo));
        const Range last = chunk_range(segment.count, static_cast<std::size_t>(p), static_cast<std::size_t>(hi - 1));
        return Range{segment.offset + first.offset, last.offset + last.count - first.offset};
      };
      if (v < 0) {  // folded away: hand over the input, get the result back
        list.send(rank + 1, segment.count, input_at(segment.offset));
        list.recv_copy(rank + 1, segment.count, output_at(segment.offset));
        continue;
      }
      Buffer data = Buffer::input;  // where this rank's running partial sums live
      if (rank < 2 * extra) {
        list.recv_reduce(rank - 1, segment.count, input_at(segment.offset), output_at(segment.offset));
        data = Buffer::output;
      } else if (p == 1) {
        list.copy(segment.count, input_at(segment.offset), output_at(segment.offset));
      }
      int lo = 0;
      int hi = p;
      for (int mask = p / 2; mask >= 1; mask /= 2) {  // reduce-scatter: keep one half, give the other
        const int partner = hd_real_rank(v ^ mask, extra);
        const int mid = lo + mask;
        const bool upper = (v & mask) != 0;
        const Range give = upper ? chunks(lo, mid) : chunks(mid, hi);
        const Range keep = upper ? chunks(mid, hi) : chunks(lo, mid);
        list.send(partner, give.count, Span{data, give.offset});
        list.recv_reduce(partner, keep.count, Span{data, keep.offset}, output_at(keep.offset));
        data = Buffer::output;
        if (upper) lo = mid; else hi = mid;
      }
      for (int mask = 1; mask < p; mask *= 2) {  // all-gather: swap finished ranges, doubling them
        const int partner = hd_real_rank(v ^ mask, extra);
        const bool upper = (v & mask) != 0;
        const int size = hi - lo;
        const Range mine = chunks(lo, hi);
        const Range theirs = upper ? chunks(lo - size, lo) : chunks(hi, hi + size);
        list.send(partner, mine.count, output_at(mine.offset));
        list.recv_copy(partner, theirs.count, output_at(theirs.offset));
        if (upper) lo -= size; else hi += size;
      }
      if (rank < 2 * extra) list.send(rank - 1, segment.count, output_at(segment.offset));
    }
  }
  link(schedule);
  return schedule;
}
#endif

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
