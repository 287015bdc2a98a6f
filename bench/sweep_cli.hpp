// The nccl-tests size and timing flags (-b -e -i -f -n -w -c) that chorus-bench and chorus-mpi-peer share,
// so the two tools read them alike and a comparison runs both with one command line.
#pragma once

#include <chorus/bench/sizes.hpp>

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace chorus::bench {

// The flags as typed (sizes take K, M, G suffixes); parse() turns them into a SweepSpec.
struct SweepFlags {
  std::string min_text = "32M";
  std::string max_text = "32M";
  std::string step_text = "1M";
  std::size_t factor = 0;
  int iters = 20;
  int warmup = 5;
  int check_iters = 1;

  SweepSpec parse() const {
    SweepSpec spec;
    spec.min_bytes = parse_size(min_text);
    spec.max_bytes = parse_size(max_text);
    spec.step_bytes = parse_size(step_text);
    spec.step_factor = factor;
    return spec;
  }
};

// Adds -b -e -i -f -n -w -c to `app`; `check_help` says what -c 0 means for this tool.
inline void add_sweep_flags(CLI::App& app, SweepFlags& flags, const std::string& check_help) {
  app.add_option("-b,--minbytes", flags.min_text, "smallest size in bytes")->capture_default_str();
  app.add_option("-e,--maxbytes", flags.max_text, "largest size in bytes")->capture_default_str();
  app.add_option("-i,--stepbytes", flags.step_text, "add this many bytes per step (without -f)")->capture_default_str();
  app.add_option("-f,--stepfactor", flags.factor, "multiply the size by this factor per step (>= 2; overrides -i)");
  app.add_option("-n,--iters", flags.iters, "timed calls per size")->capture_default_str()->check(CLI::Range(1, 1 << 30));
  app.add_option("-w,--warmup_iters", flags.warmup, "untimed calls before timing")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("-c,--check", flags.check_iters, check_help)->capture_default_str()->check(CLI::Range(0, 1 << 30));
}

}  // namespace chorus::bench
