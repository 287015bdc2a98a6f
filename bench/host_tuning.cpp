// chorus-host-tuning: times every pattern of every collective on the host backend, per message
// size and rank count, to place the constants in include/chorus/host/tuning.hpp (which pattern
// Algorithm::automatic picks, and the pipelining slice). Prints microseconds per call, the best
// of a few repetitions, for a quiet machine's numbers.
//
//   chorus-host-tuning [max_bytes] [ranks...]      default: 4 MiB, ranks 2 4 8
#include <chorus/host.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using chorus::ReduceOp;
using chorus::algo::Collective;
using chorus::algo::Pattern;
using Clock = std::chrono::steady_clock;

// Best time per call of `pattern` on `count` floats (the call's count), in microseconds.
double time_pattern(chorus::host::Team& team, Collective collective, Pattern pattern, std::size_t count) {
  const int ranks = team.size();
  const std::size_t bytes = count * sizeof(float);
  const int iters = static_cast<int>(std::clamp<std::size_t>((64u << 20) / std::max<std::size_t>(bytes, 1) / ranks, 3, 500));
  double best = 1e30;
  team.run([&](chorus::host::Comm& comm) {
    const std::size_t elements = count * static_cast<std::size_t>(ranks);
    std::vector<float> in(elements, 1.0f), out(elements, 0.0f);
    const auto call = [&] {
      chorus::host::detail::CommAccess::collective(comm, collective, pattern, in.data(), out.data(), count,
                                                   ReduceOp::sum, 0);
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
  const std::size_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (4u << 20);
  std::vector<int> rank_counts;
  for (int i = 2; i < argc; ++i) rank_counts.push_back(std::atoi(argv[i]));
  if (rank_counts.empty()) rank_counts = {2, 4, 8};
  const Collective collectives[] = {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather,
                                    Collective::broadcast, Collective::reduce};
  for (int ranks : rank_counts) {
    chorus::host::Team team(ranks);
    for (Collective collective : collectives) {
      std::vector<Pattern> patterns;
      for (int p = 0; p <= static_cast<int>(Pattern::pairwise); ++p) {
        if (chorus::algo::supports(collective, static_cast<Pattern>(p))) patterns.push_back(static_cast<Pattern>(p));
      }
      std::printf("# %s, %d ranks: us per call (bytes = the call's count in bytes)\n%10s", chorus::algo::to_string(collective),
                  ranks, "bytes");
      for (Pattern p : patterns) std::printf(" %16s", chorus::algo::to_string(p));
      std::printf("\n");
      for (std::size_t bytes = 256; bytes <= max_bytes; bytes *= 4) {
        std::printf("%10zu", bytes);
        for (Pattern p : patterns) std::printf(" %16.1f", time_pattern(team, collective, p, bytes / sizeof(float)));
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
}
