// The nccl-tests size and timing flags (-b -e -i -f -n -w -c) and --min-time that chorus-bench and
// chorus-mpi-peer share, so the two tools read them alike, count their calls by one rule
// (sample_timing.hpp) and a comparison runs both with one command line.
#pragma once

#include <chorus/bench/sizes.hpp>
#include <chorus/core/config.hpp>

#include "sample_timing.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

CHORUS_NAMESPACE_BEGIN namespace bench {

// The flags as typed (sizes take K, M, G suffixes); parse() turns them into a SweepSpec.
struct SweepFlags {
  std::string min_text = "32M";
  std::string max_text = "32M";
  std::string step_text = "1M";
  std::size_t factor = 0;
  int iters = 20;
  int warmup = 5;
  int check_iters = 1;
  std::string min_time_text = "20ms";
  CLI::Option* iters_option = nullptr;  // set by add_sweep_flags: was -n given?

  SweepSpec parse() const {
    SweepSpec spec;
    spec.min_bytes = parse_size(min_text);
    spec.max_bytes = parse_size(max_text);
    spec.step_bytes = parse_size(step_text);
    spec.step_factor = factor;
    return spec;
  }

  // -n given: exactly that many calls; otherwise chosen by --min-time.
  sample_timing::Rule rule() const {
    sample_timing::Rule r;
    r.iters = iters_option != nullptr && iters_option->count() > 0 ? iters : 0;
    r.warmup = warmup;
    r.min_time = sample_timing::parse_min_time(min_time_text);
    return r;
  }
};

// Adds -b -e -i -f -n -w -c to `app`; `check_help` says what -c 0 means for this tool.
inline void add_sweep_flags(CLI::App& app, SweepFlags& flags, const std::string& check_help) {
  app.add_option("-b,--minbytes", flags.min_text, "smallest size in bytes")->capture_default_str();
  app.add_option("-e,--maxbytes", flags.max_text, "largest size in bytes")->capture_default_str();
  app.add_option("-i,--stepbytes", flags.step_text, "add this many bytes per step (without -f)")->capture_default_str();
  app.add_option("-f,--stepfactor", flags.factor, "multiply the size by this factor per step (>= 2; overrides -i)");
  flags.iters_option = app.add_option("-n,--iters", flags.iters,
                                      "timed calls per size, exactly (default: as many as --min-time takes, at least " +
                                          std::to_string(sample_timing::kMinTimedCalls) + ")")
                           ->check(CLI::Range(1, 1 << 30));
  app.add_option("-w,--warmup_iters", flags.warmup, "untimed calls before timing (without -n: at least this many)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  sample_timing::add_min_time_flag(app, flags.min_time_text);
  app.add_option("-c,--check", flags.check_iters, check_help)->capture_default_str()->check(CLI::Range(0, 1 << 30));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
