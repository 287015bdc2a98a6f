// How many calls a sample times, shared by chorus-bench (every backend) and chorus-mpi-peer so that
// every tool and backend decides it by one rule (docs/benchmarks.md, "How a sample is timed").
//
//   -n N given:  exactly N timed calls in one loop after exactly -w warm-up calls (nccl-tests' meaning).
//   -n absent:   the warm-up is also a pilot. After one call (start-up, not measured) it runs in batches
//                that grow at most tenfold (as Google Benchmark grows its iteration count) until they have
//                lasted --min-time / 2 and the warm-up has made at least -w calls; then the sample makes N = max(20, min-time / per-call time) calls (the
//                per-call time of the pilot's fastest batch), so that it lasts at least --min-time
//                (mpiBench's time limit, the OSU benchmarks' many calls for small messages and few for
//                large ones). The N calls are timed as up to kMaxLoops loops of at least 20 calls each,
//                every loop between barriers, and the sample's figure is the median loop's: a loop that
//                a neighbour's process preempted is outvoted instead of averaged in, so a sample of
//                20 ms is not slower than a 2000-call loop of 0.5 ms merely for being 40 times more
//                likely to meet a preemption (issue 30).
//
// Every batch's and loop's time is the maximum over the ranks (agree_max, a collective), so every rank
// sees the same figures, takes the same decisions and makes the same number of calls: ranks that chose
// different counts would wait for each other's collectives forever.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <chorus/bench/table.hpp>
#include <chorus/bench/timing.hpp>
#include <chorus/core/error.hpp>

namespace sample_timing {

inline constexpr int kMinTimedCalls = 20;    // nccl-tests' default -n: never fewer calls than before
inline constexpr int kMaxCalls = 1 << 30;
inline constexpr double kDefaultMinTime = 0.02;  // seconds
inline constexpr int kMaxLoops = 20;  // a 20 ms sample of small calls: 20 loops of 1 ms, each thousands of calls

struct Rule {
  int iters = 0;   // > 0: exactly this many timed calls (-n); 0: chosen by time
  int warmup = 5;  // exactly (with -n), or the least number of warm-up calls (without)
  double min_time = kDefaultMinTime;  // seconds a sample lasts at least, without -n
  bool by_time() const { return iters == 0; }
};

// What one sample measured, and how many calls it made.
struct Sample {
  double seconds = 0.0;  // -n: this rank's mean per timed call; by time: the median loop's slowest rank's
  int warmup = 0;
  int iters = 0;  // timed calls, all loops together
  int loops = 1;
  std::vector<double> loop_seconds;  // by time: each loop's slowest rank's mean per call, in order
};

// "20ms", "0.5s", "200us", or a bare number of seconds (Google Benchmark's --benchmark_min_time).
inline double parse_min_time(const std::string& text) {
  std::size_t used = 0;
  double value = -1.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "s" ? 1.0 : unit == "ms" ? 1e-3 : unit == "us" ? 1e-6 : -1.0;
  if (used == 0 || scale < 0 || !(value > 0) || !std::isfinite(value) || value * scale > 3600) {
    throw chorus::Error(chorus::ErrorCode::invalid_argument,
                        "--min-time expects a positive time such as 20ms, 0.5s or 200us (at most an hour), got \"" +
                            text + "\"");
  }
  return value * scale;
}

// Adds --min-time to `app`; `text` keeps what was typed, for parse_min_time.
inline CLI::Option* add_min_time_flag(CLI::App& app, std::string& text) {
  return app.add_option("--min-time", text,
                        "without -n: time each sample for at least this long (20ms, 0.5s, 200us), with at least " +
                            std::to_string(kMinTimedCalls) + " calls; the warm-up lasts half of it")
      ->capture_default_str();
}

inline int calls_for(double seconds, double per_call) {
  if (!(per_call > 0)) return kMaxCalls;
  const double calls = std::ceil(seconds / per_call);
  return calls >= kMaxCalls ? kMaxCalls : static_cast<int>(calls);
}

// The nearest-rank median (the lower middle one of an even count): always a measured loop, never an average.
inline double median_loop(std::vector<double> loops) {
  std::sort(loops.begin(), loops.end());
  return loops[(loops.size() + 1) / 2 - 1];
}

// Warms up, chooses the counts by `rule`, then times with chorus::bench::seconds_per_call (a barrier,
// back-to-back calls). agree_max(x) returns the maximum of x over the ranks, identically on every rank.
template <class Comm, class Fn, class AgreeMax>
Sample time_calls(Comm& comm, const Rule& rule, Fn&& call, AgreeMax&& agree_max) {
  Sample out;
  if (!rule.by_time()) {
    out.warmup = rule.warmup;
    out.iters = rule.iters;
    out.seconds = chorus::bench::seconds_per_call(comm, rule.warmup, rule.iters, call);
    return out;
  }
  const double warmup_time = rule.min_time / 2;
  double elapsed = 0.0, per_call = 0.0;
  int batch = 1;
  // The first call pays for starting up (new rank threads moving to their cores, page faults): it is
  // warm-up but no estimate, or one slow first call would end the pilot and leave the sample 20 calls.
  for (bool first = true;; first = false) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) call();
    const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double slowest = agree_max(mine);
    out.warmup += batch;
    if (!first) {
      elapsed += slowest;
      // The fastest batch's rate: a stall (a scheduler tick, a neighbour) only ever slows a batch down,
      // and a stall in the last batch must not cut the sample short.
      per_call = per_call > 0 ? std::min(per_call, slowest / batch) : slowest / batch;
      if (out.warmup >= rule.warmup && elapsed >= warmup_time) break;
    }
    const int by_count = rule.warmup - out.warmup;
    const int by_time = first ? 1 : elapsed < warmup_time ? calls_for(warmup_time - elapsed, per_call) : 0;
    batch = std::clamp(std::max(by_count, by_time), 1, batch >= kMaxCalls / 10 ? kMaxCalls : batch * 10);
    if (out.warmup >= kMaxCalls - batch) break;
  }
  const int calls = std::max(kMinTimedCalls, calls_for(rule.min_time, per_call));
  out.loops = std::clamp(calls / kMinTimedCalls, 1, kMaxLoops);
  const int per_loop = calls / out.loops + (calls % out.loops != 0);
  for (int i = 0; i < out.loops; ++i) {
    out.loop_seconds.push_back(agree_max(chorus::bench::seconds_per_call(comm, 0, per_loop, call)));
  }
  out.iters = per_loop * out.loops;
  out.seconds = median_loop(out.loop_seconds);
  return out;
}

// The counts each row's samples made, out of place and in place (tables, JSON): the reported sample's,
// and with several samples (chorus-bench --repeats) every sample's time (the slowest rank's) and count.
struct Counts {
  int warmup[2] = {0, 0};
  int iters[2] = {0, 0};
  int loops[2] = {1, 1};
  std::vector<double> loop_seconds[2];  // the reported sample's loops (by time; empty with -n)
  std::vector<double> samples_seconds[2];
  std::vector<int> samples_iters[2];
  double spread(int placement) const {
    const auto& s = samples_seconds[placement];
    if (s.empty()) return 1.0;
    const auto [low, high] = std::minmax_element(s.begin(), s.end());
    return *low > 0 ? *high / *low : 1.0;
  }
};

inline constexpr int kCallsWidth = 9;
inline constexpr int kSpreadWidth = 7;

// A three-line table header with two columns appended: a group title over "oop" and "ip".
inline std::string header_with_pair(const std::string& header, const char* title, int width) {
  using chorus::bench::detail::printf_string;
  const std::string cells[3] = {printf_string("  %*s", 2 * width + 2, title),
                                printf_string("  %*s  %*s", width, "oop", width, "ip"),
                                printf_string("  %*s  %*s", width, "", width, "")};
  std::string out;
  std::size_t start = 0;
  for (int line = 0; line < 3; ++line) {
    const std::size_t end = header.find('\n', start);
    std::string text = header.substr(start, end - start);
    const std::size_t width = header.find('\n', header.find('\n') + 1) - header.find('\n') - 1;
    if (text.size() < width) text.resize(width, ' ');
    std::string cell = cells[line];
    out += text + cell;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
    start = end + 1;
  }
  return out;
}

// The table's header with "timed calls  oop  ip" appended, for runs whose counts were chosen by time.
inline std::string header_with_calls(const std::string& header) {
  return header_with_pair(header, "timed calls", kCallsWidth);
}

// ... with "max/min  oop  ip" appended, for chorus-bench --repeats.
inline std::string header_with_spread(const std::string& header) {
  return header_with_pair(header, "max/min", kSpreadWidth);
}

inline std::string row_with_spread(std::string row, const Counts& counts) {
  if (!row.empty() && row.back() == '\n') row.pop_back();
  return row + chorus::bench::detail::printf_string("  %*.2f  %*.2f\n", kSpreadWidth, counts.spread(0), kSpreadWidth,
                                                    counts.spread(1));
}

// A formatted row (ending in '\n') with the two timed-call counts appended.
inline std::string row_with_calls(std::string row, const Counts& counts) {
  if (!row.empty() && row.back() == '\n') row.pop_back();
  return row + chorus::bench::detail::printf_string("  %*d  %*d\n", kCallsWidth, counts.iters[0], kCallsWidth,
                                                    counts.iters[1]);
}

// The preamble's "warmup iters: W iters: N" for nccl-tests, or what the rule is when it chooses by time.
inline std::string describe(const Rule& rule) {
  if (!rule.by_time()) return "warmup iters: " + std::to_string(rule.warmup) + " iters: " + std::to_string(rule.iters);
  char text[200];
  std::snprintf(text, sizeof text,
                "warmup iters: auto iters: auto (min-time %g ms, at least %d calls, median of up to %d loops; see last "
                "columns)",
                rule.min_time * 1e3, kMinTimedCalls, kMaxLoops);
  return text;
}

}  // namespace sample_timing
