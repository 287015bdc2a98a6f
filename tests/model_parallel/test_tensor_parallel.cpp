// Tensor parallel: column- and row-parallel linear layers, the MLP and its sequence-parallel form,
// and vocab-parallel cross-entropy equal the unsplit computation and issue Megatron's collectives,
// on host threads and on the mailbox fake (tests/support/model_parallel_checks.hpp, which also runs
// under MPI); Megatron's per-rank RNG seeds (pure).
#include <catch2/catch.hpp>

#include "support/model_parallel_checks.hpp"
#include "support/recording_comm.hpp"
#include "support/run_on_every_communicator.hpp"

#include <chorus/parallel/host_gemm.hpp>
#include <chorus/parallel/mesh.hpp>
#include <chorus/parallel/rng_seeds.hpp>
#include <chorus/parallel/tensor_parallel_mappings.hpp>
#include <chorus/parallel/vocab_parallel_cross_entropy.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace test_tensor_parallel {

using support::run_on_every_communicator;  // on 1 to 4 ranks of host threads and of the mailbox fake

static_assert(chorus::check_communicator<support::RecordingComm<chorus::host::Comm>>(),
              "the recording wrapper keeps the communicator contract");

TEST_CASE("gemm multiplies row-major matrices, transposed or not", "[tensor_parallel]") {
  using chorus::parallel::Transpose;
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};     // [2 x 3]
  const std::vector<float> b = {1, 0, 0, 1, 1, 1};     // [3 x 2]
  std::vector<float> c(4, 100.0f);
  chorus::parallel::gemm(Transpose::no, Transpose::no, 2, 2, 3, a.data(), b.data(), 0.0f, c.data());
  CHECK(c == std::vector<float>{4, 5, 10, 11});
  chorus::parallel::gemm(Transpose::no, Transpose::no, 2, 2, 3, a.data(), b.data(), 1.0f, c.data());
  CHECK(c == std::vector<float>{8, 10, 20, 22});  // beta 1 accumulates
  const std::vector<float> at = {1, 4, 2, 5, 3, 6};  // a transposed, stored [3 x 2]
  const std::vector<float> bt = {1, 0, 1, 0, 1, 1};  // b transposed, stored [2 x 3]
  chorus::parallel::gemm(Transpose::yes, Transpose::yes, 2, 2, 3, at.data(), bt.data(), 0.0f, c.data());
  CHECK(c == std::vector<float>{4, 5, 10, 11});
}

TEST_CASE("columns_of_rank and rows_of_rank cut the blocks Megatron gives each rank", "[tensor_parallel]") {
  const std::vector<float> m = {0, 1, 2, 3, 4, 5, 6, 7};  // [2 x 4]
  CHECK(chorus::parallel::columns_of_rank(m, 4, 1, 2) == std::vector<float>{2, 3, 6, 7});
  CHECK(chorus::parallel::rows_of_rank(m, 4, 1, 2) == std::vector<float>{4, 5, 6, 7});
  CHECK_THROWS_WITH(chorus::parallel::columns_of_rank(m, 4, 0, 3),
                    Catch::Contains("columns_of_rank") && Catch::Contains("cols = 4 is not divisible by the 3"));
  CHECK_THROWS_WITH(chorus::parallel::rows_of_rank(m, 3, 0, 2), Catch::Contains("8 floats"));
}

TEST_CASE("column-parallel linear equals the full layer; backward all-reduces dX once", "[tensor_parallel]") {
  run_on_every_communicator("column", [](auto& comm) { return mp_checks::column_parallel_checks(comm); });
}

TEST_CASE("row-parallel linear equals the full layer; forward all-reduces once, bias added once", "[tensor_parallel]") {
  run_on_every_communicator("row", [](auto& comm) { return mp_checks::row_parallel_checks(comm); });
}

TEST_CASE("parallel MLP equals the unsplit MLP with one all-reduce forward and one backward", "[tensor_parallel]") {
  run_on_every_communicator("mlp", [](auto& comm) { return mp_checks::mlp_checks(comm); });
}

TEST_CASE("sequence-parallel MLP: all-gather and reduce-scatter instead of all-reduce", "[tensor_parallel]") {
  run_on_every_communicator("sequence parallel",
                            [](auto& comm) { return mp_checks::sequence_parallel_mlp_checks(comm); });
}

TEST_CASE("tensor-parallel layers refuse bad sizes, naming the call and the value", "[tensor_parallel]") {
  run_on_every_communicator("errors", [](auto& comm) { return mp_checks::tensor_parallel_error_checks(comm); });
}

TEST_CASE("vocab-parallel cross-entropy equals the unsplit loss with three all-reduces; backward is local",
          "[tensor_parallel]") {
  run_on_every_communicator("vocab-parallel cross-entropy",
                            [](auto& comm) { return mp_checks::vocab_parallel_cross_entropy_checks(comm); });
}

TEST_CASE("vocab_range_of_rank gives contiguous ranges, as Megatron's VocabUtility", "[tensor_parallel]") {
  using chorus::parallel::vocab_range_of_rank;
  CHECK(vocab_range_of_rank(12, 0, 4).begin == 0);
  CHECK(vocab_range_of_rank(12, 0, 4).end == 3);
  CHECK(vocab_range_of_rank(12, 3, 4).begin == 9);
  CHECK(vocab_range_of_rank(12, 3, 4).end == 12);
  CHECK(vocab_range_of_rank(12, 3, 4).contains(11));
  CHECK_FALSE(vocab_range_of_rank(12, 3, 4).contains(12));
  CHECK_FALSE(vocab_range_of_rank(12, 0, 4).contains(-1));
  CHECK_THROWS_WITH(vocab_range_of_rank(10, 1, 4),
                    Catch::Contains("vocab_range_of_rank on rank 1") && Catch::Contains("vocab_size = 10"));
}

TEST_CASE("rng_seeds are Megatron's: seed + 100 pp_rank, TP stream + 2718 + tp_rank", "[tensor_parallel][rng]") {
  using chorus::parallel::ParallelRanks;
  using chorus::parallel::rng_seeds;
  // model_parallel_cuda_manual_seed(seed) after _set_random_seed(base): the numbers Megatron uses.
  const auto s = rng_seeds(1234, ParallelRanks{/*tp*/ 1, /*pp*/ 2, /*dp*/ 3, /*ep*/ 2, /*etp*/ 1});
  CHECK(s.default_seed == 1234u + 200u);
  CHECK(s.tensor_parallel_seed == 1234u + 200u + 2718u + 1u);
  CHECK(s.expert_parallel_seed == 1234u + 200u + 1024u + 200u + 1u);
  const auto dp_init = rng_seeds(1234, ParallelRanks{1, 2, 3, 0, 0}, /*data_parallel_random_init*/ true);
  CHECK(dp_init.default_seed == 1234u + 200u + 30u);
  CHECK(dp_init.tensor_parallel_seed == 1234u + 200u + 30u + 2718u + 1u);
  CHECK(rng_seeds(7, ParallelRanks{}).default_seed == 7u);
  CHECK(rng_seeds(7, ParallelRanks{}).tensor_parallel_seed == 7u + 2718u);
  CHECK_THROWS_WITH(rng_seeds(7, ParallelRanks{-1, 0, 0, 0, 0}),
                    Catch::Contains("rng_seeds") && Catch::Contains("tp rank = -1"));
}

TEST_CASE("rng_seeds over a mesh: the default stream is shared by TP and DP, the TP stream differs per TP rank",
          "[tensor_parallel][rng]") {
  using chorus::parallel::Mesh;
  using chorus::parallel::rng_seeds;
  const Mesh mesh = Mesh::megatron(16, /*tp*/ 2, /*pp*/ 2);  // dp = 4
  auto mask = [](std::uint64_t seed) {  // a dropout mask drawn from a stream seeded with `seed`
    std::mt19937_64 generator(seed);
    std::vector<bool> keep(64);
    for (std::size_t i = 0; i < keep.size(); ++i) keep[i] = generator() % 10 != 0;
    return keep;
  };
  for (int rank = 0; rank < mesh.world_size(); ++rank) {
    INFO("rank " << rank);
    const auto mine = rng_seeds(42, mesh, rank);
    CHECK(mine.default_seed == 42u + 100u * static_cast<unsigned>(mesh.coordinate(rank, "pp")));
    CHECK(mine.tensor_parallel_seed == mine.default_seed + 2718u + static_cast<unsigned>(mesh.coordinate(rank, "tp")));
    for (int other : mesh.group_of(rank, "tp")) {  // same default stream; distinct TP streams and masks
      CHECK(rng_seeds(42, mesh, other).default_seed == mine.default_seed);
      if (other != rank) {
        CHECK(rng_seeds(42, mesh, other).tensor_parallel_seed != mine.tensor_parallel_seed);
        CHECK(mask(rng_seeds(42, mesh, other).tensor_parallel_seed) != mask(mine.tensor_parallel_seed));
      }
    }
    for (int replica : mesh.group_of(rank, "dp")) {  // data-parallel replicas: identical, masks too
      CHECK(rng_seeds(42, mesh, replica).default_seed == mine.default_seed);
      CHECK(rng_seeds(42, mesh, replica).tensor_parallel_seed == mine.tensor_parallel_seed);
      CHECK(mask(rng_seeds(42, mesh, replica).tensor_parallel_seed) == mask(mine.tensor_parallel_seed));
      if (replica != rank) {
        CHECK(rng_seeds(42, mesh, replica, true).default_seed != rng_seeds(42, mesh, rank, true).default_seed);
      }
    }
    for (int stage : mesh.group_of(rank, "pp")) {  // pipeline stages: distinct
      if (stage != rank) CHECK(rng_seeds(42, mesh, stage).default_seed != mine.default_seed);
    }
  }
  std::set<std::uint64_t> streams;  // one TP stream per (tp, pp) position
  for (int rank = 0; rank < mesh.world_size(); ++rank) streams.insert(rng_seeds(42, mesh, rank).tensor_parallel_seed);
  CHECK(streams.size() == 4u);
  CHECK_THROWS_WITH(rng_seeds(42, mesh, 16), Catch::Contains("rank 16 is outside"));
}

}  // namespace test_tensor_parallel
