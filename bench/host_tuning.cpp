// chorus-host-tuning: times every algorithm of every collective on the host backend, per message
// size and rank count, to place the constants in include/chorus/host/tuning.hpp (which pattern
// Algorithm::automatic picks, and the pipelining slice). Prints microseconds per call, the best
// of a few repetitions, for a quiet machine's numbers.
//
//   chorus-host-tuning [max_bytes] [ranks...]      default: 4M, ranks 2 4 8 (sizes as chorus-bench: 1M, 64K)
#include <CLI/CLI.hpp>

#include <chorus/bench.hpp>
#include <chorus/host.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using chorus::Algorithm;
using chorus::Collective;
using chorus::ReduceOp;
using Clock = std::chrono::steady_clock;

// Best time per call of `algorithm` on `count` floats (the call's count), in microseconds.
double time_algorithm(chorus::host::Team& team, Collective collective, Algorithm algorithm, std::size_t count) {
  const int ranks = team.size();
  const std::size_t bytes = count * sizeof(float);
  const int iters = static_cast<int>(std::clamp<std::size_t>((64u << 20) / std::max<std::size_t>(bytes, 1) / ranks, 3, 500));
  double best = 1e30;
  team.run([&](chorus::host::Comm& comm) {
    const std::size_t elements = count * static_cast<std::size_t>(ranks);
    std::vector<float> in(elements, 1.0f), out(elements, 0.0f);
    const auto call = [&] {
      chorus::bench::call_collective(comm, collective, in.data(), out.data(), count, ReduceOp::sum, 0, algorithm);
    };
    call();  // warm-up: builds the schedule, touches the pages
    for (int repetition = 0; repetition < 3; ++repetition) {
      comm.barrier();
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) call();
      comm.barrier();
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
      if (comm.rank() == 0) best = std::min(best, us);
    }
  });
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("chorus-host-tuning: time every host algorithm of every collective per size and rank count");
  std::string max_text = "4M";
  std::vector<int> rank_counts = {2, 4, 8};
  app.add_option("max_bytes", max_text, "largest call size (e.g. 4M, 64K, 1024)")->capture_default_str();
  app.add_option("ranks", rank_counts, "rank counts to time")->check(CLI::Range(1, 4096))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-host-tuning: error: ");
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::size_t max_bytes = 0;
  try {
    max_bytes = chorus::bench::parse_size(max_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-host-tuning: error: %s\n", e.what());
    return 2;
  }
  const Collective collectives[] = {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather,
                                    Collective::broadcast, Collective::reduce};
  for (int ranks : rank_counts) {
    chorus::host::Team team(ranks);
    for (Collective collective : collectives) {
      std::vector<Algorithm> algorithms;
      for (int a = 1; a < chorus::kAlgorithmCount; ++a) {
        if (chorus::supports(collective, static_cast<Algorithm>(a))) algorithms.push_back(static_cast<Algorithm>(a));
      }
      std::printf("# %s, %d ranks: us per call (bytes = the call's count in bytes)\n%10s", chorus::to_string(collective),
                  ranks, "bytes");
      for (Algorithm a : algorithms) std::printf(" %16s", chorus::to_string(a));
      std::printf("\n");
      for (std::size_t bytes = 256; bytes <= max_bytes; bytes *= 4) {
        std::printf("%10zu", bytes);
        for (Algorithm a : algorithms) std::printf(" %16.1f", time_algorithm(team, collective, a, bytes / sizeof(float)));
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
}
