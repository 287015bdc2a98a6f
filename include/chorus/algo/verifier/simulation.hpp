// The verifier's simulation: runs a schedule on expressions instead of numbers, following the executor's
// rules (a send only publishes; a recv waits for its matching send and reads the sender's memory when it runs;
// a step that writes memory overlapping one of its own unacknowledged sends waits until the receiver read it),
// then checks every output element against what the collective promises. Part of the verifier's bodies
// (verifier_inl.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../printer.hpp"
#include "../schedule.hpp"
#include "expressions.hpp"
#include "step_checks.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::verify_detail {

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

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::verify_detail
