// The symbolic verifier: runs a schedule on expressions instead of numbers and proves that every
// output element ends up holding exactly what the collective promises. Each input element is a
// leaf (rank, index); a reduction builds combine(left, right). Expressions are hash-consed, so two
// ranks hold the same id exactly when they computed the same value in the same order: that is
// the bit-identical-results rule for all_reduce.
//
// The simulation follows the executor's rules (see schedule.hpp and the backends): a send only
// publishes; a recv waits for its matching send and reads the sender's memory when it runs
// (zero-copy); a step that writes memory overlapping one of its own unacknowledged sends waits
// until the receiver has read it. Input and output share one address space per rank, laid out
// as the in-place aliasing says, so aliasing hazards are real. A schedule that cannot finish is
// reported as a deadlock naming every stuck rank and what it waits for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "printer.hpp"
#include "../core/config.hpp"
#include "schedule.hpp"

namespace chorus::algo {

struct Verdict {
  bool ok = true;
  std::string problem;             // empty when ok; otherwise names rank, step and element
  std::size_t elements_sent = 0;   // sum of count over all send steps, for cost checks
};

// Proves the schedule correct for its collective, or explains the first problem found. Never
// throws for a malformed schedule: every defect becomes Verdict::problem.
CHORUS_FUNC Verdict verify(const Schedule& schedule);

#if CHORUS_DEFINE_BODIES
// The simulation behind verify(): compiled in each translation unit header-only, once in libchorus in
// compiled mode (core/config.hpp).
namespace verify_detail {

using chorus::detail::concat;

// Bounds that keep a malformed schedule from exhausting memory: beyond them we refuse to verify.
constexpr int kMaxRanks = 1024;
constexpr std::size_t kMaxElements = std::size_t{1} << 26;  // all ranks' buffers together
constexpr std::size_t kMaxExpressions = std::size_t{1} << 24;
constexpr std::uint32_t kRenderLeaves = 8;  // larger expressions are summarised in messages

using Expr = std::uint32_t;
constexpr Expr kUndefined = 0;

// Ids 1..ranks*per_rank are the leaves (rank p, input index j), in that order; every later id
// is combine(left, right) of two smaller ids, so children always precede parents.
class Expressions {
 public:
  Expressions(int ranks, std::size_t per_rank)
      : per_rank_(per_rank), first_node_(static_cast<std::size_t>(ranks) * per_rank + 1) {}

  Expr leaf(int rank, std::size_t index) const {
    return static_cast<Expr>(1 + static_cast<std::size_t>(rank) * per_rank_ + index);
  }
  bool is_leaf(Expr e) const { return e != kUndefined && e < first_node_; }
  int leaf_rank(Expr e) const { return static_cast<int>((e - 1) / per_rank_); }
  std::size_t leaf_index(Expr e) const { return (e - 1) % per_rank_; }
  std::pair<Expr, Expr> operands(Expr e) const { return nodes_[e - first_node_]; }

  // The id of combine(left, right); kUndefined when the expression budget is spent.
  Expr combine(Expr left, Expr right) {
    if (2 * (nodes_.size() + 1) > slots_.size()) grow();
    const std::pair<Expr, Expr> key(left, right);
    for (std::size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const Expr id = slots_[slot];
      if (id == kUndefined) {
        if (nodes_.size() >= kMaxExpressions) return kUndefined;
        nodes_.push_back(key);
        return slots_[slot] = static_cast<Expr>(first_node_ + nodes_.size() - 1);
      }
      if (nodes_[id - first_node_] == key) return id;
    }
  }

  // Leaves under each combined expression, repeats counted, saturating at cap. One forward pass
  // suffices because children precede parents; no recursion, so deep expressions are fine.
  void count_leaves(std::uint32_t cap) {
    cap_ = cap;
    leaves_.assign(nodes_.size(), 0);
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      leaves_[k] = std::min(cap, leaf_count(nodes_[k].first) + leaf_count(nodes_[k].second));
    }
  }
  // Valid after count_leaves().
  std::uint32_t leaf_count(Expr e) const { return is_leaf(e) ? 1 : leaves_[e - first_node_]; }
  std::uint32_t cap() const { return cap_; }

  // The leaves of e in left-to-right order; call only when leaf_count(e) < cap().
  std::vector<Expr> leaves_of(Expr e) const {
    std::vector<Expr> leaves;
    std::vector<Expr> stack{e};
    while (!stack.empty()) {
      const Expr x = stack.back();
      stack.pop_back();
      if (is_leaf(x)) {
        leaves.push_back(x);
      } else {
        stack.push_back(operands(x).second);
        stack.push_back(operands(x).first);
      }
    }
    return leaves;
  }

  std::string leaf_text(Expr e) const { return concat("r", leaf_rank(e), ".in[", leaf_index(e), "]"); }

  // "((r0.in[1] + r1.in[1]) + r2.in[1])"; valid after count_leaves().
  std::string render(Expr e) const {
    if (e == kUndefined) return "no data (never written)";
    if (is_leaf(e)) return leaf_text(e);
    const std::uint32_t leaves = leaf_count(e);
    if (leaves >= cap_) return concat("a combination of ", cap_, " or more contributions");
    if (leaves > kRenderLeaves) return concat("a combination of ", leaves, " contributions");
    return concat("(", render(operands(e).first), " + ", render(operands(e).second), ")");
  }

 private:
  static std::size_t hash(std::pair<Expr, Expr> key) {
    std::uint64_t x = (std::uint64_t{key.first} << 32) | key.second;  // a 64-bit finaliser mix
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
  }

  void grow() {
    std::vector<Expr> slots(std::max<std::size_t>(1024, 2 * slots_.size()), kUndefined);
    mask_ = slots.size() - 1;
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      std::size_t slot = hash(nodes_[k]) & mask_;
      while (slots[slot] != kUndefined) slot = (slot + 1) & mask_;
      slots[slot] = static_cast<Expr>(first_node_ + k);
    }
    slots_.swap(slots);
  }

  std::size_t per_rank_;
  std::size_t first_node_;
  std::vector<std::pair<Expr, Expr>> nodes_;
  // The hash-consing index: open addressing over ids (0 = empty slot), kept at most half full.
  // Its keys live in nodes_, so a slot costs 4 bytes and nothing is allocated per expression.
  std::vector<Expr> slots_;
  std::size_t mask_ = 0;
  std::vector<std::uint32_t> leaves_;
  std::uint32_t cap_ = 0;
};

// Where input, output and scratch start in a rank's one address space (indexed by Buffer).
struct Layout {
  std::size_t base[3] = {0, 0, 0};
  std::size_t size[3] = {0, 0, 0};
  std::size_t total = 0;
  std::size_t address(Span span) const { return base[static_cast<int>(span.buffer)] + span.offset; }
};

inline Layout layout_of(const Schedule& schedule, int rank) {
  Layout layout;
  const std::size_t in = schedule.input_count();
  const std::size_t out = schedule.output_count();
  const std::size_t own = static_cast<std::size_t>(rank) * schedule.count;
  layout.size[0] = in;
  layout.size[1] = out;
  layout.size[2] = schedule.scratch_count;
  std::size_t end = in + out;
  if (!schedule.in_place) {
    layout.base[1] = in;
  } else if (traits(schedule.collective).in_place == InPlaceLayout::send_inside_recv) {
    layout.base[0] = own;  // input is this rank's slot of the output
    end = out;
  } else if (traits(schedule.collective).in_place == InPlaceLayout::recv_inside_send) {
    layout.base[1] = own;  // output is this rank's slot of the input
    end = in;
  } else {
    end = std::max(in, out);  // the same memory
  }
  layout.base[2] = end;
  layout.total = end + schedule.scratch_count;
  return layout;
}

inline std::string where(const Schedule& schedule, int rank, std::size_t index) {
  return concat("rank ", rank, " step ", index, " (", describe(schedule.steps[rank][index]), ")");
}

inline std::string element_text(Span span, std::size_t k) {
  return concat(to_string(span.buffer), "[", span.offset + k, "]");
}

// Shape of the whole schedule; run first so later checks may index freely.
inline std::string check_shape(const Schedule& schedule) {
  const int n = schedule.ranks;
  if (n < 1 || n > kMaxRanks) return concat("ranks is ", n, "; the verifier handles 1..", kMaxRanks);
  const auto collective = static_cast<unsigned>(schedule.collective);
  if (collective >= static_cast<unsigned>(kCollectiveCount)) return concat("invalid collective ", collective);
  if (schedule.steps.size() != static_cast<std::size_t>(n)) {
    return concat("the schedule has step lists for ", schedule.steps.size(), " ranks but ranks is ", n);
  }
  if (traits(schedule.collective).rooted && (schedule.root < 0 || schedule.root >= n)) {
    return concat("root ", schedule.root, " is not a rank of ", n);
  }
  // Checked piecewise so that no product or sum can overflow before the comparison.
  const std::size_t per_rank_limit = kMaxElements / static_cast<std::size_t>(n);
  if (schedule.count > per_rank_limit || schedule.scratch_count > per_rank_limit ||
      schedule.input_count() + schedule.output_count() + schedule.scratch_count > per_rank_limit) {
    return concat("count ", schedule.count, " and scratch ", schedule.scratch_count, " on ", n,
                  " ranks exceed the verifier's limit of ", kMaxElements, " elements in all");
  }
  return {};
}

// What is wrong with a span a step uses, or "" (messages are built only on failure: this runs
// for every step, so it must stay cheap).
inline std::string span_defect(const char* role, Span span, std::size_t count, const Layout& layout) {
  const auto buffer = static_cast<unsigned>(span.buffer);
  if (buffer > static_cast<unsigned>(Buffer::scratch)) return concat(role, " names invalid buffer ", buffer);
  const std::size_t size = layout.size[buffer];
  if (span.offset > size || count > size - span.offset) {
    return concat(role, " ", range_text(span, count), " lies outside ", to_string(span.buffer), " (", size,
                  " elements)");
  }
  return {};
}

// What is wrong with a step judged alone, or "".
inline std::string step_defect(const Schedule& schedule, int rank, const Step& step, const Layout& layout) {
  if (step.op == Op::send || is_recv(step.op)) {
    if (step.peer < 0 || step.peer >= schedule.ranks) {
      return concat("peer ", step.peer, " is not a rank of ", schedule.ranks);
    }
    if (step.peer == rank) return "a rank cannot message itself";
  }
  const bool reads = step.op != Op::recv_copy;
  const bool writes_dst = writes(step.op);
  std::string defect;
  if (reads && !(defect = span_defect("source", step.src, step.count, layout)).empty()) return defect;
  if (writes_dst && !(defect = span_defect("destination", step.dst, step.count, layout)).empty()) return defect;
  if (writes_dst && step.dst.buffer == Buffer::input) {
    return "writes the input buffer; only output and scratch may be written";
  }
  const bool non_root = rank != schedule.root;
  if (traits(schedule.collective).recv_on_root_only && non_root &&
      ((reads && step.src.buffer == Buffer::output) || (writes_dst && step.dst.buffer == Buffer::output))) {
    return "a non-root rank of reduce touches out, which may be null there (use scratch)";
  }
  if (traits(schedule.collective).send_on_root_only && non_root && reads && step.src.buffer == Buffer::input) {
    return "a non-root rank of broadcast reads in, which may be null there";
  }
  if (reads && writes_dst && step.count > 0) {
    // Element-wise ops are safe when source and destination coincide; a shifted overlap gives
    // results that depend on the order the executor walks the range.
    const std::size_t src = layout.address(step.src);
    const std::size_t dst = layout.address(step.dst);
    if (src != dst && src < dst + step.count && dst < src + step.count) {
      return "source and destination overlap in memory without coinciding";
    }
  }
  return {};
}

inline std::string check_step(const Schedule& schedule, int rank, std::size_t index, const Layout& layout) {
  const Step& step = schedule.steps[rank][index];
  const auto op = static_cast<unsigned>(step.op);
  if (op > static_cast<unsigned>(Op::reduce)) return concat("rank ", rank, " step ", index, " has invalid op ", op);
  const std::string defect = step_defect(schedule, rank, step, layout);
  return defect.empty() ? defect : concat(where(schedule, rank, index), ": ", defect);
}

class Simulation {
 public:
  explicit Simulation(const Schedule& schedule)
      : s_(schedule), exprs_(schedule.ranks, schedule.input_count()) {
    const int n = s_.ranks;
    layouts_.reserve(n);
    for (int rank = 0; rank < n; ++rank) layouts_.push_back(layout_of(s_, rank));
    memory_.resize(n);
    pending_.resize(n);
    next_.assign(n, 0);
    for (int rank = 0; rank < n; ++rank) {
      const Layout& layout = layouts_[rank];
      memory_[rank].assign(layout.total, kUndefined);
      // A non-root rank's broadcast input may be null: it holds nothing worth reading.
      if (traits(s_.collective).send_on_root_only && rank != s_.root) continue;
      for (std::size_t j = 0; j < layout.size[0]; ++j) memory_[rank][layout.base[0] + j] = exprs_.leaf(rank, j);
    }
  }

  const Layout& layout(int rank) const { return layouts_[rank]; }

  // Runs every rank to completion; returns the first problem, or "" when all finished.
  std::string run() {
    const int n = s_.ranks;
    std::size_t remaining = 0;
    for (const auto& steps : s_.steps) remaining += steps.size();
    bool progress = true;
    while (remaining > 0 && progress) {
      progress = false;
      for (int rank = 0; rank < n; ++rank) {
        const auto& steps = s_.steps[rank];
        std::size_t& next = next_[rank];
        while (next < steps.size() && wait_of(rank, next).kind == Wait::none) {
          std::string problem = execute(rank, next);
          if (!problem.empty()) return problem;
          ++next;
          --remaining;
          progress = true;
        }
      }
    }
    return remaining == 0 ? std::string() : deadlock();
  }

  // Postconditions of the collective, after run() succeeded.
  std::string check_result() {
    const int n = s_.ranks;
    const std::size_t c = s_.count;
    exprs_.count_leaves(static_cast<std::uint32_t>(2 * n + 2));
    std::string problem;
    switch (s_.collective) {
      case Collective::all_reduce:
        for (int rank = 0; rank < n; ++rank) {
          for (std::size_t i = 0; i < c; ++i) {
            const Expr e = output(rank, i);
            if (rank > 0 && e == output(0, i)) continue;
            if (!(problem = check_sum(rank, i, i)).empty()) return problem;
            if (rank > 0) {
              return concat("rank ", rank, " out[", i, "] holds ", exprs_.render(e), " but rank 0 holds ",
                            exprs_.render(output(0, i)),
                            ": the same contributions combined in a different order, so results differ in bits");
            }
          }
        }
        return {};
      case Collective::reduce_scatter:
        for (int rank = 0; rank < n; ++rank) {
          for (std::size_t i = 0; i < c; ++i) {
            if (!(problem = check_sum(rank, i, static_cast<std::size_t>(rank) * c + i)).empty()) return problem;
          }
        }
        return {};
      case Collective::reduce:
        for (std::size_t i = 0; i < c; ++i) {
          if (!(problem = check_sum(s_.root, i, i)).empty()) return problem;
        }
        return {};
      case Collective::broadcast:
        for (int rank = 0; rank < n; ++rank) {
          for (std::size_t i = 0; i < c; ++i) {
            if (!(problem = check_copy(rank, i, exprs_.leaf(s_.root, i))).empty()) return problem;
          }
        }
        return {};
      case Collective::all_gather:
      case Collective::all_to_all: {
        const bool gather = s_.collective == Collective::all_gather;
        for (int rank = 0; rank < n; ++rank) {
          for (int peer = 0; peer < n; ++peer) {
            for (std::size_t i = 0; i < c; ++i) {
              const std::size_t from = gather ? i : static_cast<std::size_t>(rank) * c + i;
              problem = check_copy(rank, static_cast<std::size_t>(peer) * c + i, exprs_.leaf(peer, from));
              if (!problem.empty()) return problem;
            }
          }
        }
        return {};
      }
    }
    return "invalid collective";
  }

 private:
  struct Wait {
    enum Kind { none, message, hazard } kind = none;
    int rank = -1;           // message: the sender; hazard: the receiver of our send
    std::uint32_t step = 0;  // message: the sender's step; hazard: our unacknowledged send
  };

  const Step& step_at(int rank, std::size_t index) const { return s_.steps[rank][index]; }

  Wait wait_of(int rank, std::size_t index) const {
    const Step& step = step_at(rank, index);
    if (is_recv(step.op) && next_[step.peer] <= step.match) return {Wait::message, step.peer, step.match};
    if (writes(step.op) && step.count > 0) {
      const std::size_t dst = layouts_[rank].address(step.dst);
      for (const std::uint32_t sent_index : pending_[rank]) {
        const Step& sent = step_at(rank, sent_index);
        const std::size_t src = layouts_[rank].address(sent.src);
        if (sent.count > 0 && dst < src + sent.count && src < dst + step.count) {
          return {Wait::hazard, sent.peer, sent_index};
        }
      }
    }
    return {};
  }

  std::string undefined_read(int rank, std::size_t index, Span span, std::size_t k) const {
    return concat(where(s_, rank, index), " reads ", element_text(span, k), ", which holds no data yet");
  }

  std::string out_of_expressions(int rank, std::size_t index) const {
    return concat(where(s_, rank, index), ": more than ", kMaxExpressions,
                  " distinct expressions; the schedule is too large to verify");
  }

  std::string execute(int rank, std::size_t index) {
    const Step& step = step_at(rank, index);
    const Layout& layout = layouts_[rank];
    std::vector<Expr>& memory = memory_[rank];
    switch (step.op) {
      case Op::send:
        pending_[rank].push_back(static_cast<std::uint32_t>(index));
        return {};
      case Op::recv_copy:
      case Op::recv_reduce: {
        const int peer = step.peer;
        const Step& sent = step_at(peer, step.match);
        const Expr* remote = memory_[peer].data() + layouts_[peer].address(sent.src);
        const std::size_t src = step.op == Op::recv_reduce ? layout.address(step.src) : 0;  // recv_copy: unused
        const std::size_t dst = layout.address(step.dst);
        for (std::size_t k = 0; k < step.count; ++k) {
          Expr value = remote[k];
          if (value == kUndefined) {
            return concat(where(s_, peer, step.match), " sends ", element_text(sent.src, k),
                          ", which holds no data yet (received by ", where(s_, rank, index), ")");
          }
          if (step.op == Op::recv_reduce) {
            const Expr local = memory[src + k];
            if (local == kUndefined) return undefined_read(rank, index, step.src, k);
            if ((value = exprs_.combine(local, value)) == kUndefined) return out_of_expressions(rank, index);
          }
          memory[dst + k] = value;
        }
        auto& unacknowledged = pending_[peer];
        const auto acknowledged = std::find(unacknowledged.begin(), unacknowledged.end(), step.match);
        if (acknowledged != unacknowledged.end()) unacknowledged.erase(acknowledged);
        return {};
      }
      case Op::copy:
      case Op::reduce: {
        const std::size_t src = layout.address(step.src);
        const std::size_t dst = layout.address(step.dst);
        for (std::size_t k = 0; k < step.count; ++k) {
          Expr value = memory[src + k];
          if (value == kUndefined) return undefined_read(rank, index, step.src, k);
          if (step.op == Op::reduce) {
            const Expr acc = memory[dst + k];
            if (acc == kUndefined) return undefined_read(rank, index, step.dst, k);
            if ((value = exprs_.combine(acc, value)) == kUndefined) return out_of_expressions(rank, index);
          }
          memory[dst + k] = value;
        }
        return {};
      }
    }
    return concat(where(s_, rank, index), ": invalid op");
  }

  std::string deadlock() const {
    constexpr int kListed = 8;
    std::string text = "deadlock:";
    int stuck = 0;
    for (int rank = 0; rank < s_.ranks; ++rank) {
      const std::size_t index = next_[rank];
      if (index >= s_.steps[rank].size()) continue;
      if (++stuck > kListed) continue;
      const Wait wait = wait_of(rank, index);
      text += concat(stuck > 1 ? "; " : " ", where(s_, rank, index));
      if (wait.kind == Wait::message) {
        text += concat(" waits for ", where(s_, wait.rank, wait.step), ", but rank ", wait.rank,
                       " is stuck at step ", next_[wait.rank]);
      } else {
        text += concat(" overwrites what its step ", wait.step, " sent to rank ", wait.rank,
                       ", so it waits until rank ", wait.rank, " has received it (write hazard)");
      }
    }
    if (stuck > kListed) text += concat("; and ", stuck - kListed, " more stuck ranks");
    return text;
  }

  Expr output(int rank, std::size_t i) const { return memory_[rank][layouts_[rank].base[1] + i]; }

  // output[element] of rank must combine in[index] of every rank, each exactly once.
  std::string check_sum(int rank, std::size_t element, std::size_t index) const {
    const Expr e = output(rank, element);
    const std::string at = concat("rank ", rank, " out[", element, "]: expected in[", index, "] of all ", s_.ranks,
                                  " ranks combined, each exactly once, but found ");
    if (e == kUndefined) return at + exprs_.render(e);
    if (exprs_.leaf_count(e) >= exprs_.cap()) return at + exprs_.render(e);
    std::vector<std::uint32_t> times(s_.ranks, 0);
    for (const Expr leaf : exprs_.leaves_of(e)) {
      if (exprs_.leaf_index(leaf) != index) {
        return concat(at, exprs_.render(e), " (", exprs_.leaf_text(leaf), " does not belong there)");
      }
      ++times[exprs_.leaf_rank(leaf)];
    }
    for (int p = 0; p < s_.ranks; ++p) {
      if (times[p] == 0) return concat(at, exprs_.render(e), " (r", p, ".in[", index, "] is missing)");
      if (times[p] > 1) {
        return concat(at, exprs_.render(e), " (r", p, ".in[", index, "] appears ", times[p], " times)");
      }
    }
    return {};
  }

  std::string check_copy(int rank, std::size_t element, Expr expected) const {
    const Expr e = output(rank, element);
    if (e == expected) return {};
    return concat("rank ", rank, " out[", element, "]: expected ", exprs_.leaf_text(expected), " but found ",
                  exprs_.render(e));
  }

  const Schedule& s_;
  Expressions exprs_;
  std::vector<Layout> layouts_;
  std::vector<std::vector<Expr>> memory_;
  std::vector<std::vector<std::uint32_t>> pending_;  // per rank: its executed, unacknowledged sends
  std::vector<std::size_t> next_;                    // per rank: the next step to run
};

inline std::string verify_or_explain(const Schedule& schedule, std::size_t& elements_sent) {
  std::string problem = check_shape(schedule);
  if (!problem.empty()) return problem;
  for (const auto& steps : schedule.steps) {
    for (const Step& step : steps) {
      if (step.op == Op::send) elements_sent += step.count;
    }
  }
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const Layout layout = layout_of(schedule, rank);
    for (std::size_t index = 0; index < schedule.steps[rank].size(); ++index) {
      if (!(problem = check_step(schedule, rank, index, layout)).empty()) return problem;
    }
  }
  // Pair messages on a copy: a failure means they do not line up; a difference means the
  // schedule was never linked, and an executor would pair them wrongly.
  Schedule linked = schedule;
  try {
    link(linked);
  } catch (const Error& error) {
    return concat("messages do not pair up: ", error.what());
  }
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    for (std::size_t index = 0; index < schedule.steps[rank].size(); ++index) {
      const std::uint32_t expected = linked.steps[rank][index].match;
      if (schedule.steps[rank][index].match != expected) {
        return concat(where(schedule, rank, index), ": match is ", schedule.steps[rank][index].match,
                      " but link() gives ", expected, " (was link() called?)");
      }
    }
  }
  Simulation simulation(schedule);
  if (!(problem = simulation.run()).empty()) return problem;
  return simulation.check_result();
}

}  // namespace verify_detail

CHORUS_FUNC Verdict verify(const Schedule& schedule) {
  Verdict verdict;
  try {
    verdict.problem = verify_detail::verify_or_explain(schedule, verdict.elements_sent);
  } catch (const std::exception& error) {
    verdict.problem = chorus::detail::concat("the verifier could not finish: ", error.what());
  }
  verdict.ok = verdict.problem.empty();
  return verdict;
}
#endif

}  // namespace chorus::algo
