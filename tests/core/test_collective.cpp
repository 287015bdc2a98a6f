// The one table of collective facts, and which algorithms serve which collective.
#include <catch2/catch.hpp>

#include <chorus/core/algorithm.hpp>
#include <chorus/core/collective.hpp>

#include <cstring>

namespace test_collective {

using chorus::Algorithm;
using chorus::Collective;

TEST_CASE("each collective's facts", "[collective]") {
  using chorus::traits;
  CHECK(traits(Collective::all_reduce).reduces);
  CHECK(traits(Collective::reduce).reduces);
  CHECK(traits(Collective::reduce_scatter).reduces);
  CHECK_FALSE(traits(Collective::all_gather).reduces);
  CHECK_FALSE(traits(Collective::broadcast).reduces);
  CHECK_FALSE(traits(Collective::all_to_all).reduces);
  for (Collective c : chorus::kCollectives) {
    const bool rooted = c == Collective::broadcast || c == Collective::reduce;
    CHECK(traits(c).rooted == rooted);
    CHECK(std::strcmp(chorus::to_string(c), traits(c).name) == 0);
  }
  CHECK(std::strcmp(chorus::to_string(static_cast<Collective>(6)), "unknown") == 0);
  // Buffer sizes for count 5 on 4 ranks.
  CHECK(chorus::send_count(Collective::all_reduce, 5, 4) == 5);
  CHECK(chorus::recv_count(Collective::all_reduce, 5, 4) == 5);
  CHECK(chorus::send_count(Collective::reduce_scatter, 5, 4) == 20);
  CHECK(chorus::recv_count(Collective::reduce_scatter, 5, 4) == 5);
  CHECK(chorus::send_count(Collective::all_gather, 5, 4) == 5);
  CHECK(chorus::recv_count(Collective::all_gather, 5, 4) == 20);
  CHECK(chorus::send_count(Collective::all_to_all, 5, 4) == 20);
  CHECK(chorus::recv_count(Collective::all_to_all, 5, 4) == 20);
  CHECK(chorus::send_count(Collective::broadcast, 5, 4) == 5);
  CHECK(chorus::recv_count(Collective::reduce, 5, 4) == 5);
  CHECK(traits(Collective::broadcast).send_on_root_only);
  CHECK(traits(Collective::reduce).recv_on_root_only);
}

TEST_CASE("in-place buffers as NCCL lays them out", "[collective]") {
  const chorus::InPlaceBuffer ag = chorus::in_place_buffer(Collective::all_gather, 2, 4, 5);
  CHECK(ag.buffer_count == 20);
  CHECK(ag.send_offset == 10);
  CHECK(ag.recv_offset == 0);
  const chorus::InPlaceBuffer rs = chorus::in_place_buffer(Collective::reduce_scatter, 3, 4, 5);
  CHECK(rs.buffer_count == 20);
  CHECK(rs.send_offset == 0);
  CHECK(rs.recv_offset == 15);
  const chorus::InPlaceBuffer a2a = chorus::in_place_buffer(Collective::all_to_all, 1, 4, 5);
  CHECK(a2a.buffer_count == 20);
  CHECK(a2a.send_offset == 0);
  CHECK(a2a.recv_offset == 0);
  const chorus::InPlaceBuffer ar = chorus::in_place_buffer(Collective::all_reduce, 3, 4, 5);
  CHECK(ar.buffer_count == 5);
  CHECK(ar.send_offset == 0);
  CHECK(chorus::in_place_buffer(Collective::all_gather, 0, 1, 0).buffer_count == 0);

  float buffer[20];
  CHECK(chorus::is_in_place(Collective::all_gather, buffer + 10, buffer, 2, 5, sizeof(float)));
  CHECK_FALSE(chorus::is_in_place(Collective::all_gather, buffer, buffer, 2, 5, sizeof(float)));
  CHECK(chorus::is_in_place(Collective::reduce_scatter, buffer, buffer + 15, 3, 5, sizeof(float)));
  CHECK(chorus::is_in_place(Collective::all_reduce, buffer, buffer, 3, 5, sizeof(float)));
  CHECK_FALSE(chorus::is_in_place(Collective::all_reduce, buffer, buffer + 1, 3, 5, sizeof(float)));
}

TEST_CASE("which algorithms implement which collective", "[collective][algorithm]") {
  int served = 0;
  for (Collective c : chorus::kCollectives) {
    CHECK(chorus::supports(c, Algorithm::automatic));
    for (int a = 1; a < chorus::kAlgorithmCount; ++a) {
      const auto algorithm = static_cast<Algorithm>(a);
      if (chorus::supports(c, algorithm)) {
        ++served;
        CHECK_THAT(chorus::algorithm_choices(c), Catch::Contains(chorus::to_string(algorithm)));
      }
    }
  }
  CHECK(served == 5 + 2 + 2 + 2 + 2 + 1);  // all_reduce 5; rs, ag, bcast, reduce 2 each; a2a 1
  CHECK(chorus::supports(Collective::broadcast, Algorithm::chain));
  CHECK_FALSE(chorus::supports(Collective::broadcast, Algorithm::ring));
  CHECK_FALSE(chorus::supports(Collective::all_reduce, Algorithm::direct));
  CHECK(std::strcmp(chorus::to_string(Algorithm::pairwise), "pairwise") == 0);
}

}  // namespace test_collective
