// Which kernel Algorithm::automatic runs (cuda/kernel_choice.hpp): the seed crossovers unchanged by
// default, settable and validated; what chorus-cuda-bench sweeps (cuda/kernel_sweep.hpp); the measured-
// crossover fit on synthetic median tables (cuda/measured_crossovers.hpp: ties, non-monotone noise, a
// ring that never wins); and, on the twin, that crossovers set in the options change the kernel that runs.
#include <catch2/catch.hpp>

#include <chorus/cuda/kernel_sweep.hpp>
#include <chorus/cuda/measured_crossovers.hpp>
#include <chorus/cuda/twin/twin_team.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace test_kernel_choice {

using chorus::Algorithm;
using chorus::Collective;
using chorus::Error;
using chorus::ErrorCode;
using chorus::cuda::KernelCrossovers;
using chorus::cuda::KernelTiming;
using chorus::cuda::kernel_for;
using K = chorus::cuda::kernel::KernelAlgorithm;
namespace sweep = chorus::cuda::sweep;

TEST_CASE("default crossovers are the seeds: LL to 16 KiB, one-shot to 512/256 KiB, two-shot to 8 MiB, then ring") {
  for (int ranks : {2, 4}) {
    CHECK(kernel_for(Algorithm::automatic, 16u << 10, ranks) == K::ll_one_shot);
    CHECK(kernel_for(Algorithm::automatic, (16u << 10) + 1, ranks) == K::one_shot);
    CHECK(kernel_for(Algorithm::automatic, 512u << 10, ranks) == K::one_shot);
    CHECK(kernel_for(Algorithm::automatic, (512u << 10) + 1, ranks) == K::two_shot);
  }
  CHECK(kernel_for(Algorithm::automatic, 256u << 10, 5) == K::one_shot);
  CHECK(kernel_for(Algorithm::automatic, (256u << 10) + 1, 8) == K::two_shot);
  CHECK(kernel_for(Algorithm::automatic, 8u << 20, 8) == K::two_shot);
  CHECK(kernel_for(Algorithm::automatic, (8u << 20) + 1, 8) == K::ring);
  CHECK(kernel_for(Algorithm::automatic, 0, 8) == K::ll_one_shot);
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter}) {
    CHECK(kernel_for(c, Algorithm::automatic, 1u << 20) == K::one_shot);
    CHECK(kernel_for(c, Algorithm::automatic, (1u << 20) + 1) == K::ring);
  }
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::all_to_all}) {
    CHECK(kernel_for(c, Algorithm::automatic, std::size_t{1} << 30) == K::one_shot);
  }
}

TEST_CASE("crossovers move automatic's switches, and explicit algorithms ignore them") {
  KernelCrossovers c;
  c.ll_max = 100;
  c.one_shot_max_small_team = 1000;
  c.one_shot_max = 500;
  c.small_team_ranks = 2;
  c.two_shot_max = 5000;
  c.gather_one_shot_max = 64;
  CHECK(kernel_for(Algorithm::automatic, 100, 2, c) == K::ll_one_shot);
  CHECK(kernel_for(Algorithm::automatic, 101, 2, c) == K::one_shot);
  CHECK(kernel_for(Algorithm::automatic, 1000, 2, c) == K::one_shot);
  CHECK(kernel_for(Algorithm::automatic, 1000, 3, c) == K::two_shot);  // 3 ranks: past small_team_ranks
  CHECK(kernel_for(Algorithm::automatic, 500, 3, c) == K::one_shot);
  CHECK(kernel_for(Algorithm::automatic, 5001, 3, c) == K::ring);
  CHECK(kernel_for(Algorithm::one_shot, 1u << 30, 3, c) == K::one_shot);
  CHECK(kernel_for(Collective::all_gather, Algorithm::automatic, 65, c) == K::ring);
  CHECK(kernel_for(Collective::reduce_scatter, Algorithm::automatic, 64, c) == K::one_shot);
  CHECK(sweep::automatic_kernel(Collective::all_gather, 17, 4, 3, c) == K::ring);  // 68 bytes of block
  CHECK(sweep::automatic_kernel(Collective::all_reduce, 25, 4, 2, c) == K::ll_one_shot);
}

TEST_CASE("check_crossovers refuses thresholds automatic cannot climb, naming the field and the values") {
  CHECK_NOTHROW(chorus::cuda::check_crossovers(KernelCrossovers{}, "cuda::Team"));
  KernelCrossovers equal;  // equal thresholds leave a kernel out: allowed
  equal.ll_max = equal.one_shot_max = equal.one_shot_max_small_team = equal.two_shot_max = 4096;
  CHECK_NOTHROW(chorus::cuda::check_crossovers(equal, "cuda::Team"));
  const auto refused = [](KernelCrossovers c) -> std::string {
    try {
      chorus::cuda::check_crossovers(c, "cuda::Team");
    } catch (const Error& e) {
      if (e.code() == ErrorCode::invalid_argument) return e.what();
      return "wrong code";
    }
    return "accepted";
  };
  KernelCrossovers ll_above;
  ll_above.ll_max = (256u << 10) + 1;
  CHECK_THAT(refused(ll_above), Catch::Contains("chorus::cuda::Team: crossovers.one_shot_max = 262144 is below crossovers.ll_max = 262145"));
  KernelCrossovers two_below;
  two_below.two_shot_max = 300u << 10;
  CHECK_THAT(refused(two_below), Catch::Contains("crossovers.two_shot_max = 307200 is below crossovers.one_shot_max_small_team = 524288"));
  KernelCrossovers negative;
  negative.small_team_ranks = -1;
  CHECK_THAT(refused(negative), Catch::Contains("crossovers.small_team_ranks must be >= 0, got -1"));
  chorus::cuda::twin::Options options;
  options.crossovers = ll_above;
  CHECK_THROWS_WITH(chorus::cuda::twin::Team(2, options), Catch::Contains("chorus::cuda::twin::Team: crossovers.one_shot_max"));
}

TEST_CASE("each Algorithm means on the CUDA kernels what core's table says it means on every backend") {
  // chorus::supports is the one table: an Algorithm it does not give a collective is invalid_argument here
  // as on the host backend; one it gives either runs a kernel that serves the collective or is unsupported
  // (no kernel yet), never another algorithm's kernel.
  for (int c = 0; c < chorus::kCollectiveCount; ++c) {
    const auto collective = static_cast<Collective>(c);
    for (int a = 0; a < chorus::kAlgorithmCount; ++a) {
      const auto algorithm = static_cast<Algorithm>(a);
      INFO(chorus::to_string(collective) << " " << chorus::to_string(algorithm));
      try {
        const K kernel = chorus::cuda::kernel_for_call(collective, algorithm, 4096, 4);
        CHECK(chorus::supports(collective, algorithm));
        CHECK(chorus::cuda::kernel::supports(collective, kernel));
      } catch (const chorus::Error& e) {
        CHECK(e.code() == (chorus::supports(collective, algorithm) ? chorus::ErrorCode::unsupported : chorus::ErrorCode::invalid_argument));
      }
    }
  }
  // The named kernels: the schedule each Algorithm names everywhere.
  CHECK(chorus::cuda::kernel_for_call(Collective::broadcast, Algorithm::chain, 64, 4) == K::ring);  // the chain kernel
  CHECK(chorus::cuda::kernel_for_call(Collective::reduce, Algorithm::chain, 64, 4) == K::ring);
  CHECK(chorus::cuda::kernel_for_call(Collective::all_gather, Algorithm::direct, 64, 4) == K::one_shot);
  CHECK(chorus::cuda::kernel_for_call(Collective::reduce_scatter, Algorithm::ring, 64, 4) == K::ring);
  CHECK(chorus::cuda::kernel_for_call(Collective::all_to_all, Algorithm::pairwise, 64, 4) == K::pairwise);
  CHECK(chorus::cuda::kernel_for_call(Collective::all_reduce, Algorithm::tree, 64, 4) == K::tree);
}

TEST_CASE("the bench sweeps every kernel that serves a collective, and -c names") {
  CHECK(sweep::kernels_for(sweep::Target::all_reduce) == std::vector<K>{K::ll_one_shot, K::one_shot, K::two_shot, K::ring, K::tree});
  CHECK(sweep::kernels_for(sweep::Target::all_gather) == std::vector<K>{K::one_shot, K::ring});
  CHECK(sweep::kernels_for(sweep::Target::reduce_scatter) == std::vector<K>{K::one_shot, K::ring});
  CHECK(sweep::kernels_for(sweep::Target::broadcast) == std::vector<K>{K::one_shot, K::ring});
  CHECK(sweep::kernels_for(sweep::Target::reduce) == std::vector<K>{K::one_shot, K::ring});
  CHECK(sweep::kernels_for(sweep::Target::all_to_all) == std::vector<K>{K::one_shot, K::pairwise});
  CHECK(sweep::kernels_for(sweep::Target::sendrecv) == std::vector<K>{K::pairwise});
  CHECK(sweep::parse_targets("all").size() == 7);
  CHECK(sweep::parse_targets("reduce_scatter") == std::vector<sweep::Target>{sweep::Target::reduce_scatter});
  CHECK_THROWS_WITH(sweep::parse_targets("gather"), Catch::Contains("no collective 'gather'") && Catch::Contains("sendrecv, all"));
  CHECK(sweep::target_names().size() == 8);
  for (sweep::Target t : sweep::kTargets) {
    if (sweep::is_collective(t)) CHECK(std::string(chorus::to_string(sweep::collective_of(t))) == sweep::to_string(t));
  }
  CHECK_THROWS_AS(sweep::collective_of(sweep::Target::sendrecv), Error);
}

namespace {
// A median table: per size, one time per kernel in `kernels` order.
std::vector<KernelTiming> table(const std::vector<K>& kernels, const std::vector<std::pair<std::size_t, std::vector<double>>>& rows) {
  std::vector<KernelTiming> out;
  for (const auto& row : rows) {
    for (std::size_t k = 0; k < kernels.size(); ++k) out.push_back({row.first, kernels[k], row.second[k]});
  }
  return out;
}
std::size_t field(const chorus::cuda::CrossoverFit& fit, const std::string& name) {
  for (const auto& f : fit.fields) {
    if (f.name == name) return f.value;
  }
  return SIZE_MAX;
}
const std::vector<K> kClimb = {K::ll_one_shot, K::one_shot, K::two_shot, K::ring};
}  // namespace

TEST_CASE("fit: each switch at the largest size its kernel won, in the field for the team size") {
  //                              LL     one    two    ring   tree (ignored: automatic never picks it)
  const auto rows = table({K::ll_one_shot, K::one_shot, K::two_shot, K::ring, K::tree},
                          {{1024, {1.0, 2.0, 3.0, 4.0, 0.1}},
                           {4096, {2.0, 1.0, 3.0, 4.0, 0.1}},
                           {65536, {5.0, 2.0, 1.0, 4.0, 0.1}},
                           {1 << 20, {9.0, 5.0, 2.0, 1.0, 0.1}}});
  const auto small = chorus::cuda::fit_crossovers(Collective::all_reduce, 4, rows);
  CHECK(field(small, "ll_max") == 1024);
  CHECK(field(small, "one_shot_max_small_team") == 4096);
  CHECK(field(small, "two_shot_max") == 65536);
  CHECK(small.fields.size() == 3);
  CHECK(small.notes.empty());
  REQUIRE(small.winners.size() == 4);
  CHECK(small.winners[3].first == K::ring);
  const auto large = chorus::cuda::fit_crossovers(Collective::all_reduce, 8, rows);
  CHECK(field(large, "one_shot_max") == 4096);
  CHECK(field(large, "one_shot_max_small_team") == SIZE_MAX);  // not measured at 8 ranks
  CHECK(chorus::cuda::fit_crossovers(Collective::broadcast, 4, rows).fields.empty());
}

TEST_CASE("fit: a tie goes to the kernel earlier in the climb; beyond the tolerance the faster wins") {
  const auto rows = table(kClimb, {{1024, {1.01, 1.00, 3.0, 4.0}},  // LL 1% slower: a tie, LL keeps it
                                   {4096, {1.10, 1.00, 1.00, 4.0}},  // one-shot and two-shot equal: one-shot
                                   {8192, {3.00, 2.00, 1.00, 1.00}}});
  const auto fit = chorus::cuda::fit_crossovers(Collective::all_reduce, 2, rows, {}, 0.02);
  CHECK(field(fit, "ll_max") == 1024);
  CHECK(field(fit, "one_shot_max_small_team") == 4096);
  CHECK(field(fit, "two_shot_max") == 8192);
  // The ring tied at the largest size but never won: the last switch is a lower bound, and the note says so.
  REQUIRE(fit.notes.size() == 1);
  CHECK_THAT(fit.notes[0], Catch::Contains("ring never won up to 8192 B: two_shot_max is at least that"));
  const auto strict = chorus::cuda::fit_crossovers(Collective::all_reduce, 2, rows, {}, 0.0);
  CHECK(field(strict, "ll_max") == 0);  // without the tolerance one-shot takes 1024: LL never won
  CHECK(field(strict, "one_shot_max_small_team") == 4096);
  CHECK_THROWS_AS(chorus::cuda::fit_crossovers(Collective::all_reduce, 2, rows, {}, -1.0), Error);
}

TEST_CASE("fit: non-monotone noise moves a switch up, and the thresholds never cross") {
  // LL wins again at 16 KiB after one-shot won 8 KiB; two-shot wins 32 KiB, one-shot 64 KiB, ring the rest.
  const auto rows = table(kClimb, {{4096, {1.0, 2.0, 3.0, 4.0}},
                                   {8192, {2.0, 1.0, 3.0, 4.0}},
                                   {16384, {1.0, 2.0, 3.0, 4.0}},
                                   {32768, {4.0, 3.0, 1.0, 2.0}},
                                   {65536, {4.0, 1.0, 3.0, 2.0}},
                                   {131072, {4.0, 3.0, 2.0, 1.0}}});
  const auto fit = chorus::cuda::fit_crossovers(Collective::all_reduce, 8, rows);
  CHECK(field(fit, "ll_max") == 16384);
  CHECK(field(fit, "one_shot_max") == 65536);
  CHECK(field(fit, "two_shot_max") == 65536);  // two-shot's last win (32 KiB) lies inside one-shot's range
  const auto c = chorus::cuda::apply_fits({}, {fit});
  CHECK_NOTHROW(chorus::cuda::check_crossovers(c, "fit"));
  // Rows given in any order fit the same.
  auto shuffled = rows;
  std::reverse(shuffled.begin(), shuffled.end());
  CHECK(field(chorus::cuda::fit_crossovers(Collective::all_reduce, 8, shuffled), "ll_max") == 16384);
}

TEST_CASE("apply_fits: the measured fields, gather's smaller of two, unmeasured ones kept in order; the paste line") {
  const auto all_reduce = chorus::cuda::fit_crossovers(Collective::all_reduce, 8, table(kClimb, {{4u << 20, {1.0, 2.0, 3.0, 4.0}},
                                                                                                 {16u << 20, {4.0, 3.0, 2.0, 1.0}}}));
  const auto gather = chorus::cuda::fit_crossovers(Collective::all_gather, 8, table({K::one_shot, K::ring}, {{4096, {1.0, 2.0}},
                                                                                                              {8192, {2.0, 1.0}}}));
  const auto scatter = chorus::cuda::fit_crossovers(Collective::reduce_scatter, 8, table({K::one_shot, K::ring}, {{2048, {1.0, 2.0}},
                                                                                                                 {4096, {2.0, 1.0}}}));
  CHECK(field(gather, "gather_one_shot_max") == 4096);
  std::vector<std::string> notes;
  const KernelCrossovers c = chorus::cuda::apply_fits({}, {all_reduce, gather, scatter}, &notes);
  CHECK(c.ll_max == (4u << 20));
  CHECK(c.one_shot_max == (4u << 20));
  CHECK(c.two_shot_max == (4u << 20));
  CHECK(c.gather_one_shot_max == 2048);
  CHECK(c.one_shot_max_small_team == (4u << 20));  // 512 KiB would sit below the measured ll_max: moved up
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("one_shot_max_small_team moved from 524288 to 4194304"));
  CHECK_NOTHROW(chorus::cuda::check_crossovers(c, "fit"));
  CHECK(chorus::cuda::paste_line(c) ==
        "options.crossovers.ll_max = 4194304; options.crossovers.one_shot_max_small_team = 4194304; "
        "options.crossovers.one_shot_max = 4194304; options.crossovers.two_shot_max = 4194304; "
        "options.crossovers.gather_one_shot_max = 2048;");
  CHECK(chorus::cuda::paste_line(KernelCrossovers{}).empty());
}

// The twin: a per-rank view's Algorithm::automatic runs the kernel the team's crossovers name. Which kernel
// ran is read off the counters it left (each kernel advances its own: LL its flag, the barrier kernels the
// barrier epoch, two-shot by more barriers than one-shot, the ring its FIFO), compared with the same call
// made with that kernel explicitly on a fresh team.
namespace {
using Fingerprint = std::array<std::uint32_t, 3>;  // barrier_epoch, ll_epoch, fifo_sent of rank 0 block 0

chorus::cuda::twin::Options small(const KernelCrossovers& crossovers = {}) {
  chorus::cuda::twin::Options options;
  options.blocks = 1;
  options.threads = 2;
  options.crossovers = crossovers;
  return options;
}

constexpr int kRanks = 4;
constexpr std::size_t kCount = 64;  // 256 bytes of float

// Runs one all_reduce (explicit kernel, or automatic through the views) on a fresh team; checks the sum.
Fingerprint run(const chorus::cuda::twin::Options& options, const K* explicit_kernel, std::vector<std::string>& failures) {
  chorus::cuda::twin::Team team(kRanks, options);
  std::vector<std::vector<float>> in(kRanks, std::vector<float>(kCount)), out(kRanks, std::vector<float>(kCount, -1.0f));
  std::vector<const float*> inputs;
  std::vector<float*> outputs;
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kCount; ++i) in[static_cast<std::size_t>(r)][i] = static_cast<float>(r + 1) * static_cast<float>(i);
    inputs.push_back(in[static_cast<std::size_t>(r)].data());
    outputs.push_back(out[static_cast<std::size_t>(r)].data());
  }
  if (explicit_kernel) {
    team.all_reduce_with(inputs, outputs, kCount, chorus::ReduceOp::sum, *explicit_kernel);
  } else {
    team.group([&] {
      for (int r = 0; r < kRanks; ++r) team.comm(r).all_reduce(inputs[static_cast<std::size_t>(r)], outputs[static_cast<std::size_t>(r)], kCount, chorus::ReduceOp::sum);
    });
  }
  team.synchronize();
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kCount; ++i) {
      if (out[static_cast<std::size_t>(r)][i] != 10.0f * static_cast<float>(i)) failures.push_back("wrong sum");
    }
  }
  const auto& counters = team.counters(0, 0);
  return {counters.barrier_epoch, counters.ll_epoch, counters.fifo_sent};
}
}  // namespace

TEST_CASE("twin: crossovers in the options change the kernel automatic runs") {
  std::vector<std::string> failures;
  std::vector<Fingerprint> of_kernel;
  for (K k : kClimb) of_kernel.push_back(run(small(), &k, failures));
  for (std::size_t a = 0; a < of_kernel.size(); ++a) {
    for (std::size_t b = a + 1; b < of_kernel.size(); ++b) REQUIRE(of_kernel[a] != of_kernel[b]);  // the kernels are told apart
  }
  // 256 bytes at 4 ranks: LL by default; then each switch set below 256 hands the call to the next kernel.
  KernelCrossovers one_shot, two_shot, ring;
  one_shot.ll_max = 128;
  two_shot.ll_max = two_shot.one_shot_max_small_team = 128;
  ring.ll_max = ring.one_shot_max_small_team = ring.one_shot_max = ring.two_shot_max = 128;
  CHECK(run(small(), nullptr, failures) == of_kernel[0]);
  CHECK(run(small(one_shot), nullptr, failures) == of_kernel[1]);
  CHECK(run(small(two_shot), nullptr, failures) == of_kernel[2]);
  CHECK(run(small(ring), nullptr, failures) == of_kernel[3]);
  CHECK(failures.empty());
}

}  // namespace test_kernel_choice
