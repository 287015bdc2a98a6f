// Backend-neutral call checking: every bad argument is refused before any communication with a
// message naming the call, the rank and the value; in-place detection follows each collective's
// layout; the descriptor carries only what ranks must agree on; send's and recv's one shared check.
#include <catch2/catch.hpp>

#include <chorus/runtime/call_check.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace test_call_check {

using chorus::Algorithm;
using chorus::Collective;
using chorus::DataType;
using chorus::ReduceOp;
using chorus::runtime::check_collective;
using chorus::runtime::CollectiveArgs;

namespace {

CollectiveArgs args(Collective c, const void* send, void* recv, std::size_t count) {
  CollectiveArgs a;
  a.collective = c;
  a.type = DataType::float32;
  a.send = send;
  a.recv = recv;
  a.count = count;
  return a;
}

std::string error_of(const CollectiveArgs& a, int rank, int ranks) {
  try {
    check_collective(a, rank, ranks);
  } catch (const chorus::Error& e) {
    CHECK(e.code() == chorus::ErrorCode::invalid_argument);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("bad arguments are named with the call and the rank", "[call_check]") {
  std::vector<float> a(64), b(64);
  CollectiveArgs bad = args(Collective::all_reduce, nullptr, b.data(), 3);
  CHECK(error_of(bad, 2, 4) == "chorus::all_reduce on rank 2: send buffer is null with count 3");
  bad = args(Collective::all_reduce, a.data(), b.data(), 3);
  bad.op = static_cast<ReduceOp>(17);
  CHECK(error_of(bad, 0, 4) == "chorus::all_reduce on rank 0: reduce op 17 is not a chorus::ReduceOp");
  bad = args(Collective::all_gather, a.data(), b.data(), 3);
  bad.type = static_cast<DataType>(42);
  CHECK(error_of(bad, 1, 4) == "chorus::all_gather on rank 1: data type 42 is not a chorus::DataType");
  bad = args(Collective::broadcast, a.data(), b.data(), 3);
  bad.root = 4;
  CHECK(error_of(bad, 3, 4) == "chorus::broadcast on rank 3: root 4 is not a rank of this 4-rank communicator");
  bad.root = -1;
  CHECK_THAT(error_of(bad, 3, 4), Catch::Contains("root -1"));
  bad = args(Collective::broadcast, a.data(), b.data(), 3);
  bad.algorithm = Algorithm::ring;
  CHECK(error_of(bad, 0, 2) ==
        "chorus::broadcast on rank 0: algorithm ring does not implement broadcast (choose from automatic, chain, "
        "binomial)");
  bad.algorithm = static_cast<Algorithm>(99);
  CHECK(error_of(bad, 0, 2) == "chorus::broadcast on rank 0: algorithm 99 is not a chorus::Algorithm");
  bad = args(Collective::reduce_scatter, a.data(), b.data(), std::numeric_limits<std::size_t>::max() / 8);
  CHECK_THAT(error_of(bad, 0, 4), Catch::Contains("overflows the address space"));
  // Overlapping buffers that are not the in-place arrangement.
  bad = args(Collective::all_reduce, a.data(), a.data() + 1, 8);
  CHECK_THAT(error_of(bad, 0, 2), Catch::Contains("overlaps recv buffer"));
}

TEST_CASE("in-place detection follows each collective's layout", "[call_check]") {
  const int ranks = 4, rank = 2;
  const std::size_t count = 5;
  std::vector<float> buffer(count * ranks);
  float* base = buffer.data();
  const auto aliased = [&](Collective c, const float* send, float* recv) {
    return check_collective(args(c, send, recv, count), rank, ranks);
  };
  CHECK(aliased(Collective::all_reduce, base, base).descriptor.in_place);
  CHECK(aliased(Collective::all_gather, base + rank * count, base).descriptor.in_place);
  CHECK(aliased(Collective::reduce_scatter, base, base + rank * count).descriptor.in_place);
  CHECK(aliased(Collective::all_to_all, base, base).descriptor.in_place);
  // Rooted collectives alias but keep the out-of-place schedule, so the root may choose alone.
  CollectiveArgs root_call = args(Collective::broadcast, base, base, count);
  root_call.root = rank;
  const auto rooted = check_collective(root_call, rank, ranks);
  CHECK(rooted.buffers_alias);
  CHECK_FALSE(rooted.descriptor.in_place);
  // The in-place position of one layout is an overlap for another.
  CHECK_THROWS_WITH(aliased(Collective::all_gather, base, base), Catch::Contains("overlaps"));
  // Each collective's in_place_buffer puts the pointers where is_in_place expects them.
  for (Collective c : chorus::kCollectives) {
    const chorus::InPlaceBuffer layout = chorus::in_place_buffer(c, rank, ranks, count);
    REQUIRE(layout.buffer_count <= buffer.size());
    CHECK(chorus::is_in_place(c, base + layout.send_offset, base + layout.recv_offset, rank, count, sizeof(float)));
  }
}

TEST_CASE("rooted collectives ignore the buffer the rank does not use", "[call_check]") {
  std::vector<float> a(4);
  // A non-root broadcast rank may pass a null send, a non-root reduce rank a null recv.
  const auto bcast = check_collective(args(Collective::broadcast, nullptr, a.data(), 4), 1, 3);
  CHECK_FALSE(bcast.uses_send);
  CHECK(bcast.uses_recv);
  const auto red = check_collective(args(Collective::reduce, a.data(), nullptr, 4), 1, 3);
  CHECK(red.uses_send);
  CHECK_FALSE(red.uses_recv);
  // The root may not.
  CHECK_THROWS_WITH(check_collective(args(Collective::broadcast, nullptr, a.data(), 4), 0, 3),
                    Catch::Contains("send buffer is null"));
}

TEST_CASE("the descriptor keeps only what ranks must agree on", "[call_check]") {
  std::vector<float> a(4), b(4);
  CollectiveArgs call = args(Collective::all_gather, a.data(), b.data(), 1);
  call.op = ReduceOp::max;  // ignored: all_gather does not reduce
  call.root = 3;            // ignored: not rooted
  const auto d = check_collective(call, 0, 4).descriptor;
  CHECK(d.op == ReduceOp::sum);
  CHECK(d.root == 0);
  CHECK(d.kind == chorus::runtime::CallKind::all_gather);
  CHECK(d.count == 1);
  CHECK(d.type == DataType::float32);
}

TEST_CASE("send and recv have one argument check, naming the call, the rank and the value", "[call_check]") {
  using chorus::runtime::check_point_to_point;
  const auto error = [](auto&& check) -> std::string {
    try {
      check();
    } catch (const chorus::Error& e) {
      CHECK(e.code() == chorus::ErrorCode::invalid_argument);
      return e.what();
    }
    return "no error";
  };
  double d[3] = {};
  CHECK(check_point_to_point("send", 1, 4, d, 3, DataType::float64, 2) == 3 * sizeof(double));
  CHECK(check_point_to_point("recv", 0, 2, nullptr, 0, DataType::int8, 1) == 0);  // null is fine with count 0
  CHECK(error([&] { check_point_to_point("send", 1, 4, d, 3, DataType::float64, 4); }) ==
        "chorus::send on rank 1: peer 4 is not a rank of this 4-rank communicator");
  CHECK(error([&] { check_point_to_point("recv", 1, 4, d, 3, DataType::float64, -1); }) ==
        "chorus::recv on rank 1: peer -1 is not a rank of this 4-rank communicator");
  CHECK(error([&] { check_point_to_point("send", 2, 4, d, 3, DataType::float64, 2); }) ==
        "chorus::send on rank 2: peer 2 is this rank itself (a synchronous send to self would never complete)");
  CHECK(error([&] { check_point_to_point("recv", 3, 4, nullptr, 5, DataType::float64, 0); }) ==
        "chorus::recv on rank 3: data buffer is null with count 5");
  CHECK(error([&] { check_point_to_point("send", 0, 2, d, 3, static_cast<DataType>(42), 1); }) ==
        "chorus::send on rank 0: data type 42 is not a chorus::DataType");
  CHECK_THAT(error([&] { check_point_to_point("send", 0, 2, d, std::numeric_limits<std::size_t>::max() / 4, DataType::float64, 1); }),
             Catch::StartsWith("chorus::send on rank 0: count ") && Catch::Contains("overflows the address space"));
  // A rank of a split communicator is named in its team too.
  CHECK(error([&] { check_point_to_point("send", chorus::RankName(0, 5), 2, d, 1, DataType::float64, 7); }) ==
        "chorus::send on rank 0 (team rank 5): peer 7 is not a rank of this 2-rank communicator");
}

}  // namespace test_call_check
