// Call descriptors: the first differing field is reported with both values and both ranks.
#include <catch2/catch.hpp>

#include <chorus/host/descriptor.hpp>

using chorus::DataType;
using chorus::ReduceOp;
using chorus::host::detail::CallInfo;
using chorus::host::detail::CallKind;
using chorus::host::detail::first_difference;

TEST_CASE("equal descriptors have no difference", "[descriptor]") {
  CallInfo a;
  a.kind = CallKind::all_reduce;
  a.type = DataType::float32;
  a.count = 12;
  CallInfo b = a;
  b.color = 5;  // split's payload is not compared
  CHECK(first_difference(a, 0, b, 1).empty());
}

TEST_CASE("each field is named with both values", "[descriptor]") {
  CallInfo a;
  a.kind = CallKind::reduce;
  a.type = DataType::int32;
  a.count = 12;
  a.op = ReduceOp::sum;
  a.root = 1;
  CallInfo b = a;
  b.count = 13;
  CHECK(first_difference(a, 0, b, 2) == "count 12 on rank 0, 13 on rank 2");
  b = a;
  b.kind = CallKind::broadcast;
  CHECK(first_difference(a, 0, b, 2) == "collective reduce on rank 0, broadcast on rank 2");
  b = a;
  b.type = DataType::bfloat16;
  CHECK(first_difference(a, 3, b, 1) == "type int32 on rank 3, bfloat16 on rank 1");
  b = a;
  b.op = ReduceOp::max;
  CHECK(first_difference(a, 0, b, 1) == "op sum on rank 0, max on rank 1");
  b = a;
  b.root = 0;
  CHECK(first_difference(a, 0, b, 1) == "root 1 on rank 0, 0 on rank 1");
  b = a;
  b.pattern = chorus::algo::Pattern::tree;
  CHECK(first_difference(a, 0, b, 1) == "algorithm ring on rank 0, tree on rank 1");
  b = a;
  b.in_place = true;
  CHECK(first_difference(a, 0, b, 1) == "in-place no on rank 0, yes on rank 1");
}
