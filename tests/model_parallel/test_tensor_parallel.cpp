// Tensor parallel: column- and row-parallel linear layers, the MLP and its sequence-parallel form
// equal the unsplit layer and issue Megatron's collectives, on host threads and on the mailbox
// fake (tests/support/model_parallel_checks.hpp, which also runs under MPI).
#include <catch2/catch.hpp>

#include "support/model_parallel_checks.hpp"
#include "support/recording_comm.hpp"
#include "support/run_on_every_communicator.hpp"

#include <chorus/parallel/host_gemm.hpp>
#include <chorus/parallel/tensor_parallel_mappings.hpp>

#include <string>
#include <vector>

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
