#include <catch2/catch.hpp>

#include <chorus/core/reduce_op.hpp>

#include <cstdint>
#include <vector>

using chorus::ReduceOp;

TEMPLATE_TEST_CASE("combine applies each op with acc on the left", "[reduce_op]", std::int8_t, std::uint8_t,
                   std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double) {
  const TestType a = static_cast<TestType>(6);
  const TestType b = static_cast<TestType>(3);
  CHECK(chorus::combine(ReduceOp::sum, a, b) == static_cast<TestType>(9));
  CHECK(chorus::combine(ReduceOp::avg, a, b) == static_cast<TestType>(9));  // avg sums; division is separate
  CHECK(chorus::combine(ReduceOp::prod, a, b) == static_cast<TestType>(18));
  CHECK(chorus::combine(ReduceOp::max, a, b) == a);
  CHECK(chorus::combine(ReduceOp::min, a, b) == b);
  CHECK(chorus::divide_by(static_cast<TestType>(9), 2) == static_cast<TestType>(std::is_integral<TestType>::value ? 4 : 4.5));
}

TEST_CASE("small integers wrap like NCCL's", "[reduce_op]") {
  CHECK(chorus::combine<std::int8_t>(ReduceOp::sum, 127, 1) == -128);
  CHECK(chorus::combine<std::uint8_t>(ReduceOp::sum, 255, 2) == 1);
  CHECK(chorus::combine<std::uint8_t>(ReduceOp::prod, 16, 16) == 0);
  CHECK(chorus::divide_by<std::int32_t>(-7, 2) == -3);  // truncates toward zero
}

TEST_CASE("half and bfloat16 combine in float and round once", "[reduce_op]") {
  const chorus::half one(1.0f);
  const chorus::half tiny(0.000244140625f);  // 2^-12: 1 + 2^-12 is a tie in half, rounds to 1
  CHECK(chorus::combine(ReduceOp::sum, one, tiny) == one);
  CHECK(static_cast<float>(chorus::combine(ReduceOp::max, chorus::bfloat16(-3.0f), chorus::bfloat16(2.0f))) == 2.0f);
  CHECK(static_cast<float>(chorus::divide_by(chorus::half(3.0f), 2)) == 1.5f);
}

TEST_CASE("combine_range matches element-wise combine for every op", "[reduce_op]") {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
    std::vector<float> a(37), b(37), dst(37);
    for (int i = 0; i < 37; ++i) {
      a[i] = static_cast<float>(i % 7) - 3.0f;
      b[i] = static_cast<float>((i * 5) % 11) - 5.0f;
    }
    chorus::combine_range(op, a.data(), b.data(), dst.data(), a.size());
    for (int i = 0; i < 37; ++i) REQUIRE(dst[i] == chorus::combine(op, a[i], b[i]));
  }
}
