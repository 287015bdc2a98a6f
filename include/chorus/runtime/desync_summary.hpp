// The desync summary: from every rank's flight record of one communicator, a few lines saying where
// the ranks stopped agreeing and who is behind, for the error message of a timeout or mismatch (like
// PyTorch's NCCL desync report). Backend-neutral: a backend gathers the snapshots it can see (host
// ranks share memory, so all of them) and appends the text.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "call_record.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

// One rank's snapshot (FlightRecorder::snapshot) and whether it has left the program's function.
struct RankRecord {
  int rank = 0;
  std::vector<CallRecord> calls;  // oldest first
  bool returned = false;
};

namespace detail {

inline bool same_call(const CallDescriptor& a, const CallDescriptor& b) {
  return a.kind == b.kind && a.type == b.type && a.count == b.count && a.op == b.op && a.root == b.root &&
         a.pattern == b.pattern && a.in_place == b.in_place;
}

// Records are consecutive sequence numbers, oldest first: index directly (a summary of a large team
// looks up every rank's every call), and search only if a snapshot skipped an entry.
inline const CallRecord* find_call(const RankRecord& rank, std::uint64_t sequence) {
  if (rank.calls.empty() || sequence < rank.calls.front().sequence) return nullptr;
  const std::uint64_t index = sequence - rank.calls.front().sequence;
  if (index < rank.calls.size() && rank.calls[static_cast<std::size_t>(index)].sequence == sequence) {
    return &rank.calls[static_cast<std::size_t>(index)];
  }
  for (const CallRecord& record : rank.calls) {
    if (record.sequence == sequence) return &record;
  }
  return nullptr;
}

inline std::uint64_t reached(const RankRecord& rank) { return rank.calls.empty() ? 0 : rank.calls.back().sequence; }

inline std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += chorus::detail::concat(i > 0 ? ", " : "", ranks[i]);
  return text;
}

}  // namespace detail

// The ranks whose calls differ from the majority's at the first sequence number where recorded calls
// disagree, and that number (0 when they never disagree).
struct Disagreement {
  std::uint64_t sequence = 0;
  std::vector<int> majority;
  std::vector<int> others;
  bool no_majority = false;  // the largest group is not unique (e.g. 1 against 1): nobody can be blamed
};

inline Disagreement first_disagreement(const std::vector<RankRecord>& ranks) {
  std::uint64_t last = 0;
  std::uint64_t first = 0;  // the oldest call every record still holds: earlier ones cannot be compared
  for (const RankRecord& rank : ranks) {
    last = std::max(last, detail::reached(rank));
    if (!rank.calls.empty()) first = std::max(first, rank.calls.front().sequence);
  }
  Disagreement result;
  for (std::uint64_t s = std::max<std::uint64_t>(first, 1); s <= last; ++s) {
    // Group the ranks that recorded call s by what they called; the largest group is the majority.
    std::vector<std::vector<int>> groups;
    std::vector<const CallRecord*> heads;
    for (const RankRecord& rank : ranks) {
      const CallRecord* record = detail::find_call(rank, s);
      if (record == nullptr) continue;
      std::size_t g = 0;
      while (g < heads.size() && !detail::same_call(heads[g]->call, record->call)) ++g;
      if (g == heads.size()) {
        heads.push_back(record);
        groups.emplace_back();
      }
      groups[g].push_back(rank.rank);
    }
    if (groups.size() < 2) continue;
    std::size_t biggest = 0;
    for (std::size_t g = 1; g < groups.size(); ++g) {
      if (groups[g].size() > groups[biggest].size()) biggest = g;
    }
    result.sequence = s;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (g != biggest && groups[g].size() == groups[biggest].size()) result.no_majority = true;
    }
    result.majority = groups[biggest];
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (g != biggest) result.others.insert(result.others.end(), groups[g].begin(), groups[g].end());
    }
    std::sort(result.others.begin(), result.others.end());
    return result;
  }
  return result;
}

// "rank 2: last done call 1 all_reduce ...; now call 2 broadcast ...: running, at step 3 of 8 (peer 1)":
// what one rank's record says of where it is (the summary's per-rank line; an MPI rank's own error).
inline std::string rank_line(const RankRecord& rank) {
  using chorus::detail::concat;
  const CallRecord* done = nullptr;
  const CallRecord* current = nullptr;
  for (const CallRecord& record : rank.calls) {
    if (record.state == CallState::done) done = &record;
  }
  if (!rank.calls.empty() && rank.calls.back().state != CallState::done) current = &rank.calls.back();
  std::string text = concat("rank ", rank.rank, ": last done ",
                            done != nullptr ? concat("call ", done->sequence, " ", describe(done->call)) : std::string("none"),
                            "; now ", current != nullptr ? describe(*current) : std::string("no call in progress"));
  if (rank.returned) text += " (returned from its function)";
  return text;
}

// The summary text: a heading and one line per finding and per rank (at most kMaxRankLines ranks,
// those behind or disagreeing first).
inline std::string desync_summary(const std::vector<RankRecord>& ranks) {
  constexpr std::size_t kMaxRankLines = 16;
  using chorus::detail::concat;
  std::string text = concat("desync summary (flight recorders of ", ranks.size(), " ranks):");
  // No record at all (CHORUS_TRACE_BUFFER=0, or no call made yet) is not agreement: say so, and nothing else.
  const bool recorded = std::any_of(ranks.begin(), ranks.end(), [](const RankRecord& r) { return !r.calls.empty(); });
  if (!recorded) return text + "\n  nothing recorded (CHORUS_TRACE_BUFFER=0, or no call made yet)";
  const auto by_rank = [&](int r) -> const RankRecord& {
    for (const RankRecord& rank : ranks) {
      if (rank.rank == r) return rank;
    }
    return ranks.front();
  };

  std::vector<int> notable;
  const Disagreement split = first_disagreement(ranks);
  if (split.sequence == 0) {
    text += "\n  the ranks agree on every call they recorded";
  } else {
    const CallRecord* common = detail::find_call(by_rank(split.majority.front()), split.sequence);
    text += concat("\n  first disagreement at call ", split.sequence, ": ", detail::rank_list(split.majority),
                   " called ", describe(common->call));
    for (int r : split.others) {
      const CallRecord* theirs = detail::find_call(by_rank(r), split.sequence);
      text += concat("; rank ", r, " called ", describe(theirs->call));
    }
    if (split.no_majority) {
      text += concat("\n  no majority at call ", split.sequence,
                     ": the records cannot tell which side skipped, added or reordered a call");
    }
    // A rank that skipped a call makes, at s, the call the others make at s + 1; one with an extra
    // call makes at s + 1 the call the others make at s.
    const CallRecord* next = detail::find_call(by_rank(split.majority.front()), split.sequence + 1);
    for (int r : split.others) {
      if (split.no_majority) {
        notable.push_back(r);
        continue;
      }
      const CallRecord* theirs = detail::find_call(by_rank(r), split.sequence);
      const CallRecord* their_next = detail::find_call(by_rank(r), split.sequence + 1);
      if (next != nullptr && detail::same_call(theirs->call, next->call)) {
        text += concat("\n  rank ", r, " skipped call ", split.sequence, ": its call ", split.sequence,
                       " is the others' call ", split.sequence + 1);
      } else if (their_next != nullptr && detail::same_call(their_next->call, common->call)) {
        text += concat("\n  rank ", r, " made an extra call: its call ", split.sequence + 1, " is the others' call ",
                       split.sequence);
      } else {  // the ranks stopped at the first disagreement: what comes next is not known yet
        text += concat("\n  rank ", r, " is the odd one out at call ", split.sequence,
                       ": it skipped or added a call, or made its calls in another order");
      }
      notable.push_back(r);
    }
  }

  // Behind: the ranks that reached the lowest sequence number, when not all reached the same.
  std::uint64_t lowest = detail::reached(ranks.front());
  std::uint64_t highest = lowest;
  for (const RankRecord& rank : ranks) {
    lowest = std::min(lowest, detail::reached(rank));
    highest = std::max(highest, detail::reached(rank));
  }
  if (lowest == highest) {
    text += concat("\n  no rank is behind: every rank reached call ", highest);
  } else {
    std::vector<int> behind;
    for (const RankRecord& rank : ranks) {
      if (detail::reached(rank) == lowest) behind.push_back(rank.rank);
    }
    text += concat("\n  behind: ", detail::rank_list(behind), " (reached call ", lowest, "; others reached up to call ",
                   highest, ")");
    notable.insert(notable.end(), behind.begin(), behind.end());
  }

  std::vector<int> order = notable;
  for (const RankRecord& rank : ranks) {
    if (std::find(order.begin(), order.end(), rank.rank) == order.end()) order.push_back(rank.rank);
  }
  const std::size_t shown = std::min(order.size(), kMaxRankLines);
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown));
  for (std::size_t i = 0; i < shown; ++i) {
    text += "\n  " + rank_line(by_rank(order[i]));
  }
  if (shown < order.size()) text += concat("\n  ... ", order.size() - shown, " more ranks");
  return text;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
