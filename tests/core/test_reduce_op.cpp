#include <catch2/catch.hpp>

#include <chorus/core/reduce_op.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace test_reduce_op {

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

// ---- Integer overflow wraps (issue 7, item 2). Signed overflow is undefined behaviour in C++, so these
// pass by accident in an optimised build; test_reduce_op_ubsan (built with -fsanitize=undefined
// -fno-sanitize-recover) fails on them if combine ever does signed arithmetic again.

TEMPLATE_TEST_CASE("signed sum and prod wrap like NCCL's instead of overflowing", "[reduce_op]", std::int8_t,
                   std::int32_t, std::int64_t) {
  using L = std::numeric_limits<TestType>;
  const TestType max = L::max(), min = L::min();
  const TestType one = 1, two = 2, minus_one = -1, minus_two = -2, zero = 0;
  CHECK(chorus::combine(ReduceOp::sum, max, one) == min);
  CHECK(chorus::combine(ReduceOp::avg, max, one) == min);
  CHECK(chorus::combine(ReduceOp::sum, min, minus_one) == max);
  CHECK(chorus::combine(ReduceOp::sum, max, max) == minus_two);
  CHECK(chorus::combine(ReduceOp::sum, min, min) == zero);
  CHECK(chorus::combine(ReduceOp::prod, max, two) == minus_two);
  CHECK(chorus::combine(ReduceOp::prod, min, minus_one) == min);
  CHECK(chorus::combine(ReduceOp::prod, min, min) == zero);
  CHECK(chorus::combine(ReduceOp::prod, max, max) == one);
  CHECK(chorus::combine(ReduceOp::prod, minus_one, minus_one) == one);
  // avg: the wrapped sum, then a truncating divide, which cannot overflow for a positive rank count.
  CHECK(chorus::divide_by(min, 1) == min);
  CHECK(chorus::divide_by(min, 2) == static_cast<TestType>(min / 2));
  CHECK(chorus::divide_by(static_cast<TestType>(min + 1), 2) == static_cast<TestType>((min + 1) / 2));
  CHECK(chorus::divide_by(max, 3) == static_cast<TestType>(max / 3));
}

TEMPLATE_TEST_CASE("signed combine_range wraps in the vectorised loop too", "[reduce_op]", std::int8_t,
                   std::int32_t, std::int64_t) {
  using L = std::numeric_limits<TestType>;
  constexpr int n = 64;
  std::vector<TestType> a(n, L::max()), b(n), dst(n);
  for (int i = 0; i < n; ++i) b[i] = static_cast<TestType>(i + 1);
  chorus::combine_range(ReduceOp::sum, a.data(), b.data(), dst.data(), n);
  for (int i = 0; i < n; ++i) REQUIRE(dst[i] == static_cast<TestType>(L::min() + i));
  chorus::combine_range(ReduceOp::prod, a.data(), b.data(), dst.data(), n);
  for (int k = 1; k <= n; ++k) {  // max * k mod 2^N: -k for even k, max + 1 - k for odd k
    REQUIRE(dst[k - 1] == static_cast<TestType>(k % 2 == 0 ? -k : L::max() - (k - 1)));
  }
  std::vector<TestType> lows(n, L::min()), minus(n, static_cast<TestType>(-1));
  chorus::combine_range(ReduceOp::avg, lows.data(), minus.data(), dst.data(), n);
  for (int i = 0; i < n; ++i) REQUIRE(dst[i] == L::max());
  chorus::finish_avg(dst.data(), n, 4);
  for (int i = 0; i < n; ++i) REQUIRE(dst[i] == static_cast<TestType>(L::max() / 4));
}

TEMPLATE_TEST_CASE("unsigned sum and prod wrap", "[reduce_op]", std::uint8_t, std::uint32_t, std::uint64_t) {
  using L = std::numeric_limits<TestType>;
  const TestType max = L::max(), one = 1, two = 2, zero = 0;
  CHECK(chorus::combine(ReduceOp::sum, max, one) == zero);
  CHECK(chorus::combine(ReduceOp::prod, max, max) == one);
  CHECK(chorus::combine(ReduceOp::prod, max, two) == static_cast<TestType>(max - 1));
}

// ---- Floating min and max with NaNs and signed zeros (issue 7, item 8). The rule: a NaN loses to any number,
// two NaNs give the canonical NaN (all ones but the sign), and -0 < +0. It must not depend on which operand is
// the accumulator, nor on how the combines are grouped, or two algorithms (or two positions in one
// algorithm) give different bits for the same inputs.

namespace {

template <class T> struct Special;
template <> struct Special<float> {
  using Bits = std::uint32_t;
  static constexpr Bits kNan = 0x7fffffffu;
  static bool is_nan(Bits b) { return (b & 0x7fffffffu) > 0x7f800000u; }
  static std::vector<Bits> values() {
    return {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u,  // 0 -0 1 -1 inf -inf
            0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u, 0xff812345u, 0x7fffffffu,  // NaNs: q -q s payloads
            0x00000001u, 0x80000001u, 0x7f7fffffu, 0xff7fffffu, 0x3f800001u};               // subnormals, max, lowest
  }
};
template <> struct Special<double> {
  using Bits = std::uint64_t;
  static constexpr Bits kNan = 0x7fffffffffffffffu;
  static bool is_nan(Bits b) { return (b & 0x7fffffffffffffffu) > 0x7ff0000000000000u; }
  static std::vector<Bits> values() {
    return {0x0000000000000000u, 0x8000000000000000u, 0x3ff0000000000000u, 0xbff0000000000000u,
            0x7ff0000000000000u, 0xfff0000000000000u, 0x7ff8000000000000u, 0xfff8000000000000u,
            0x7ff0000000000001u, 0x7ff8000000012345u, 0xfff0000000012345u, 0x7fffffffffffffffu,
            0x0000000000000001u, 0x8000000000000001u, 0x7fefffffffffffffu, 0xffefffffffffffffu,
            0x3ff0000000000001u};
  }
};
template <> struct Special<chorus::half> {
  using Bits = std::uint16_t;
  static constexpr Bits kNan = 0x7fff;
  static bool is_nan(Bits b) { return (b & 0x7fff) > 0x7c00; }
  static std::vector<Bits> values() {
    return {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01,
            0x7e55, 0xfd55, 0x7fff, 0x0001, 0x8001, 0x7bff, 0xfbff, 0x3c01};
  }
};
template <> struct Special<chorus::bfloat16> {
  using Bits = std::uint16_t;
  static constexpr Bits kNan = 0x7fff;
  static bool is_nan(Bits b) { return (b & 0x7fff) > 0x7f80; }
  static std::vector<Bits> values() {
    return {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81,
            0x7fc5, 0xff85, 0x7fff, 0x0001, 0x8001, 0x7f7f, 0xff7f, 0x3f81};
  }
};

template <class T>
typename Special<T>::Bits bits_of(T value) {
  return chorus::detail::bit_cast<typename Special<T>::Bits>(value);
}
template <class T>
constexpr bool is_16_bit_float = std::is_same<T, chorus::half>::value || std::is_same<T, chorus::bfloat16>::value;
template <class T>
T from_bits(typename Special<T>::Bits bits) {
  if constexpr (is_16_bit_float<T>) {
    return T::from_bits(bits);
  } else {
    return chorus::detail::bit_cast<T>(bits);
  }
}
template <class T>
double value_of(T value) {
  if constexpr (is_16_bit_float<T>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

template <class Bits>
std::string hex(Bits bits) {
  std::ostringstream out;
  out << "0x" << std::hex << static_cast<std::uint64_t>(bits);
  return out.str();
}

}  // namespace

TEMPLATE_TEST_CASE("floating min and max give the same bits in either operand order", "[reduce_op][nan]", float,
                   double, chorus::half, chorus::bfloat16) {
  using S = Special<TestType>;
  const auto specials = S::values();
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    for (auto x : specials) {
      for (auto y : specials) {
        const auto xy = bits_of(chorus::combine(op, from_bits<TestType>(x), from_bits<TestType>(y)));
        const auto yx = bits_of(chorus::combine(op, from_bits<TestType>(y), from_bits<TestType>(x)));
        INFO(chorus::to_string(op) << "(" << hex(x) << ", " << hex(y) << ") = " << hex(xy) << ", swapped " << hex(yx));
        REQUIRE(xy == yx);
      }
    }
  }
}

TEMPLATE_TEST_CASE("floating min and max give the same bits in any grouping", "[reduce_op][nan]", float, double,
                   chorus::half, chorus::bfloat16) {
  using S = Special<TestType>;
  const auto specials = S::values();
  auto c = [](ReduceOp op, auto x, auto y) { return chorus::combine(op, x, y); };
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    for (auto x : specials) {
      for (auto y : specials) {
        for (auto z : specials) {
          const TestType a = from_bits<TestType>(x), b = from_bits<TestType>(y), d = from_bits<TestType>(z);
          const auto left = bits_of(c(op, c(op, a, b), d));
          const auto right = bits_of(c(op, a, c(op, b, d)));
          if (left != right) {
            INFO(chorus::to_string(op) << " of " << hex(x) << ", " << hex(y) << ", " << hex(z) << ": " << hex(left)
                                       << " vs " << hex(right));
            REQUIRE(left == right);
          }
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("floating min and max: a NaN loses, two NaNs are canonical, -0 < +0", "[reduce_op][nan]", float,
                   double, chorus::half, chorus::bfloat16) {
  using S = Special<TestType>;
  const auto specials = S::values();
  for (auto x : specials) {
    for (auto y : specials) {
      const TestType a = from_bits<TestType>(x), b = from_bits<TestType>(y);
      const auto lo = bits_of(chorus::combine(ReduceOp::min, a, b));
      const auto hi = bits_of(chorus::combine(ReduceOp::max, a, b));
      INFO("min(" << hex(x) << ", " << hex(y) << ") = " << hex(lo) << ", max = " << hex(hi));
      if (S::is_nan(x) && S::is_nan(y)) {
        REQUIRE(lo == S::kNan);
        REQUIRE(hi == S::kNan);
      } else if (S::is_nan(x)) {
        REQUIRE(lo == y);
        REQUIRE(hi == y);
      } else if (S::is_nan(y)) {
        REQUIRE(lo == x);
        REQUIRE(hi == x);
      } else if (value_of(a) == value_of(b) && x != y) {  // +0 and -0
        REQUIRE(lo == bits_of(from_bits<TestType>(x | y)));
        REQUIRE(value_of(from_bits<TestType>(lo)) == 0.0);
        REQUIRE(std::signbit(value_of(from_bits<TestType>(lo))));
        REQUIRE(!std::signbit(value_of(from_bits<TestType>(hi))));
      } else {
        REQUIRE(lo == (value_of(a) <= value_of(b) ? x : y));
        REQUIRE(hi == (value_of(a) >= value_of(b) ? x : y));
      }
    }
  }
}

TEMPLATE_TEST_CASE("combine_range min and max match combine bit for bit", "[reduce_op][nan]", float, double,
                   chorus::half, chorus::bfloat16) {
  using S = Special<TestType>;
  const auto specials = S::values();
  std::vector<TestType> a, b;  // every ordered pair: long enough for the vectorised body and its tail
  for (auto x : specials) {
    for (auto y : specials) {
      a.push_back(from_bits<TestType>(x));
      b.push_back(from_bits<TestType>(y));
    }
  }
  std::vector<TestType> ab(a.size()), ba(a.size());
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    chorus::combine_range(op, a.data(), b.data(), ab.data(), a.size());
    chorus::combine_range(op, b.data(), a.data(), ba.data(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(chorus::to_string(op) << "(" << hex(bits_of(a[i])) << ", " << hex(bits_of(b[i])) << ")");
      REQUIRE(bits_of(ab[i]) == bits_of(chorus::combine(op, a[i], b[i])));
      REQUIRE(bits_of(ab[i]) == bits_of(ba[i]));
    }
  }
}

// ---- Floating sum, prod and avg's divide with NaNs (issue 21, item 6). A NaN they compute is the canonical
// NaN whatever the operands' signs and payloads, so its bits depend neither on the operand order nor on
// whether a loop's vector or scalar path ran (on x86 they kept one operand's payload, and which one differed
// between those paths); every other result is IEEE's, and so also the same in either order.

TEMPLATE_TEST_CASE("floating sum and prod: a NaN result is canonical, in either operand order and loop path",
                   "[reduce_op][nan]", float, double, chorus::half, chorus::bfloat16) {
  using S = Special<TestType>;
  const auto specials = S::values();
  std::vector<TestType> a, b;  // every ordered pair: long enough for the vectorised body and its tail
  for (auto x : specials) {
    for (auto y : specials) {
      a.push_back(from_bits<TestType>(x));
      b.push_back(from_bits<TestType>(y));
    }
  }
  std::vector<TestType> ab(a.size()), ba(a.size());
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::avg}) {
    chorus::combine_range(op, a.data(), b.data(), ab.data(), a.size());
    chorus::combine_range(op, b.data(), a.data(), ba.data(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto one = bits_of(chorus::combine(op, a[i], b[i]));
      INFO(chorus::to_string(op) << "(" << hex(bits_of(a[i])) << ", " << hex(bits_of(b[i])) << ") = " << hex(one));
      if (S::is_nan(bits_of(a[i])) || S::is_nan(bits_of(b[i]))) REQUIRE(one == S::kNan);
      if (S::is_nan(one)) REQUIRE(one == S::kNan);  // Inf - Inf, 0 * Inf (x86's own NaN there is 0xffc00000)
      REQUIRE(bits_of(ab[i]) == one);
      REQUIRE(bits_of(ba[i]) == one);
      REQUIRE(bits_of(chorus::combine(op, b[i], a[i])) == one);
    }
  }
}

TEMPLATE_TEST_CASE("divide_by: a NaN result is canonical, with any rank count", "[reduce_op][nan]", float, double,
                   chorus::half, chorus::bfloat16) {
  using S = Special<TestType>;
  for (auto x : S::values()) {
    for (int ranks : {1, 3, 8}) {
      const auto q = bits_of(chorus::divide_by(from_bits<TestType>(x), ranks));
      INFO(hex(x) << " / " << ranks << " = " << hex(q));
      REQUIRE(S::is_nan(q) == S::is_nan(x));
      if (S::is_nan(q)) REQUIRE(q == S::kNan);
    }
  }
}

}  // namespace test_reduce_op
