// algbw/busbw and the sweep-size-to-call mapping (bench/bandwidth.hpp), checked against nccl-tests.
#include <catch2/catch.hpp>
#include <chorus/bench/bandwidth.hpp>

namespace test_busbw {

using chorus::Collective;
using namespace chorus::bench;

TEST_CASE("bus factors are nccl-tests' for every collective") {
  for (int n : {1, 2, 3, 4, 7, 8, 64}) {
    INFO("ranks " << n);
    const double d = n;
    CHECK(bus_factor(Collective::all_reduce, n) == Approx(2.0 * (d - 1) / d));
    CHECK(bus_factor(Collective::reduce_scatter, n) == Approx((d - 1) / d));
    CHECK(bus_factor(Collective::all_gather, n) == Approx((d - 1) / d));
    CHECK(bus_factor(Collective::all_to_all, n) == Approx((d - 1) / d));
    CHECK(bus_factor(Collective::broadcast, n) == 1.0);
    CHECK(bus_factor(Collective::reduce, n) == 1.0);
  }
}

TEST_CASE("one rank moves nothing over a link: the ring factors are 0") {
  CHECK(bus_factor(Collective::all_reduce, 1) == 0.0);
  CHECK(bus_factor(Collective::all_gather, 1) == 0.0);
  CHECK(bus_factor(Collective::reduce_scatter, 1) == 0.0);
  CHECK(bus_factor(Collective::all_to_all, 1) == 0.0);
  CHECK(busbw_gbps(Collective::all_reduce, 1, 1000, 1e-6) == 0.0);
}

TEST_CASE("concrete factors") {
  CHECK(bus_factor(Collective::all_reduce, 2) == 1.0);
  CHECK(bus_factor(Collective::all_reduce, 4) == 1.5);
  CHECK(bus_factor(Collective::all_reduce, 8) == 1.75);
  CHECK(bus_factor(Collective::all_gather, 4) == 0.75);
}

TEST_CASE("algbw uses GB = 1e9 and busbw scales it") {
  CHECK(algbw_gbps(1000000000, 1.0) == 1.0);
  CHECK(algbw_gbps(64u << 20, 0.01) == Approx(6.7108864));
  CHECK(busbw_gbps(Collective::all_reduce, 4, 1000000000, 0.5) == Approx(3.0));
  CHECK(busbw_gbps(Collective::broadcast, 4, 1000000000, 0.5) == Approx(2.0));
  SECTION("a time that did not register reports 0, not infinity") {
    CHECK(algbw_gbps(1000, 0.0) == 0.0);
    CHECK(algbw_gbps(0, 1e-6) == 0.0);
  }
}

TEST_CASE("shape: all_reduce, broadcast, reduce use the whole sweep size") {
  for (auto c : {Collective::all_reduce, Collective::broadcast, Collective::reduce}) {
    const Shape s = shape_of(c, 1024, 4, 3);
    CHECK(s.count == 256);
    CHECK(s.input_count == 256);
    CHECK(s.output_count == 256);
    CHECK(s.bytes == 1024);
    CHECK(s.elements == 256);
  }
  SECTION("bytes that are not a whole element round down") {
    const Shape s = shape_of(Collective::all_reduce, 10, 4, 4);
    CHECK(s.count == 2);
    CHECK(s.bytes == 8);
  }
}

TEST_CASE("shape: per-rank collectives split the sweep size n ways") {
  const Shape ag = shape_of(Collective::all_gather, 1024, 4, 4);
  CHECK(ag.count == 64);
  CHECK(ag.input_count == 64);
  CHECK(ag.output_count == 256);
  CHECK(ag.bytes == 1024);
  CHECK(ag.elements == 256);

  const Shape rs = shape_of(Collective::reduce_scatter, 1024, 4, 4);
  CHECK(rs.count == 64);
  CHECK(rs.input_count == 256);
  CHECK(rs.output_count == 64);
  CHECK(rs.bytes == 1024);

  const Shape a2a = shape_of(Collective::all_to_all, 1024, 4, 4);
  CHECK(a2a.count == 64);
  CHECK(a2a.input_count == 256);
  CHECK(a2a.output_count == 256);
  CHECK(a2a.bytes == 1024);
}

TEST_CASE("shape: awkward sizes round down to whole elements per rank") {
  const Shape s = shape_of(Collective::all_gather, 16, 4, 3);  // 4 floats over 3 ranks: 1 each
  CHECK(s.elements == 4);
  CHECK(s.count == 1);
  CHECK(s.output_count == 3);
  CHECK(s.bytes == 12);
  const Shape tiny = shape_of(Collective::reduce_scatter, 8, 4, 3);  // fewer elements than ranks
  CHECK(tiny.count == 0);
  CHECK(tiny.input_count == 0);
  CHECK(tiny.bytes == 0);
  const Shape zero = shape_of(Collective::all_reduce, 0, 8, 5);
  CHECK(zero.count == 0);
  CHECK(zero.bytes == 0);
  const Shape one_rank = shape_of(Collective::all_to_all, 24, 8, 1);
  CHECK(one_rank.count == 3);
  CHECK(one_rank.bytes == 24);
}

TEST_CASE("count_is_per_rank") {
  CHECK(count_is_per_rank(Collective::all_gather));
  CHECK(count_is_per_rank(Collective::reduce_scatter));
  CHECK(count_is_per_rank(Collective::all_to_all));
  CHECK_FALSE(count_is_per_rank(Collective::all_reduce));
  CHECK_FALSE(count_is_per_rank(Collective::broadcast));
  CHECK_FALSE(count_is_per_rank(Collective::reduce));
}

}  // namespace test_busbw
