// Call descriptors: the first differing field is reported with both values and both ranks, and
// the schedule key is a projection of the descriptor.
#include <catch2/catch.hpp>

#include <chorus/runtime/call_descriptor.hpp>

namespace test_call_descriptor {

using chorus::DataType;
using chorus::ReduceOp;
using chorus::runtime::CallDescriptor;
using chorus::runtime::CallKind;
using chorus::runtime::first_difference;
using chorus::runtime::schedule_key;

TEST_CASE("equal descriptors have no difference", "[descriptor]") {
  CallDescriptor a;
  a.kind = CallKind::all_reduce;
  a.type = DataType::float32;
  a.count = 12;
  CallDescriptor b = a;
  b.color = 5;  // split's payload is not compared
  CHECK(first_difference(a, 0, b, 1).empty());
}

TEST_CASE("each field is named with both values", "[descriptor]") {
  CallDescriptor a;
  a.kind = CallKind::reduce;
  a.type = DataType::int32;
  a.count = 12;
  a.op = ReduceOp::sum;
  a.root = 1;
  CallDescriptor b = a;
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

TEST_CASE("the schedule key follows the descriptor's schedule fields only", "[descriptor]") {
  CallDescriptor a;
  a.kind = CallKind::reduce;
  a.type = DataType::int32;
  a.count = 12;
  a.root = 2;
  a.pattern = chorus::algo::Pattern::binomial;
  const auto key = schedule_key(a, 4, 64);
  CHECK(key.collective == chorus::Collective::reduce);
  CHECK(key.pattern == chorus::algo::Pattern::binomial);
  CHECK(key.ranks == 4);
  CHECK(key.count == 12);
  CHECK(key.root == 2);
  CHECK(key.slice == 64);
  CHECK_FALSE(key.in_place);
  // The op and type do not change the schedule (the slice carries the element size).
  CallDescriptor b = a;
  b.op = ReduceOp::max;
  b.type = DataType::float32;
  CHECK(schedule_key(b, 4, 64) == key);
  // Every schedule field does.
  b = a;
  b.count = 13;
  CHECK(schedule_key(b, 4, 64) != key);
  b = a;
  b.root = 1;
  CHECK(schedule_key(b, 4, 64) != key);
  b = a;
  b.in_place = true;
  CHECK(schedule_key(b, 4, 64) != key);
  b = a;
  b.pattern = chorus::algo::Pattern::chain;
  CHECK(schedule_key(b, 4, 64) != key);
  CHECK(schedule_key(a, 5, 64) != key);
  CHECK(schedule_key(a, 4, 32) != key);
}

}  // namespace test_call_descriptor
