// chunk_range, slice_count, slice_of and mod: the index arithmetic schedules and kernels share.
// Checked exhaustively over small sizes, where every off-by-one shows up.
#include <chorus/algo/chunking.hpp>

#include <catch2/catch.hpp>

#include <cstddef>

namespace test_chunking {

using chorus::algo::chunk_range;
using chorus::algo::mod;
using chorus::algo::Range;
using chorus::algo::slice_count;
using chorus::algo::slice_of;

// Usable in constant expressions, as device code and static tables need.
static_assert(chunk_range(10, 4, 0).offset == 0 && chunk_range(10, 4, 0).count == 3);
static_assert(chunk_range(10, 4, 3).offset == 8 && chunk_range(10, 4, 3).count == 2);
static_assert(slice_count(0, 0) == 1 && slice_count(10, 3) == 4);
static_assert(mod(-1, 5) == 4 && mod(-10, 5) == 0 && mod(7, 5) == 2);

TEST_CASE("chunk_range covers the range exactly with near-equal parts", "[chunking]") {
  for (std::size_t count = 0; count <= 70; ++count) {
    for (std::size_t parts = 1; parts <= 17; ++parts) {
      INFO("count " << count << " parts " << parts);
      std::size_t next = 0;
      std::size_t smallest = count;
      std::size_t largest = 0;
      for (std::size_t index = 0; index < parts; ++index) {
        const Range part = chunk_range(count, parts, index);
        REQUIRE(part.offset == next);  // contiguous, in order, no gaps or overlaps
        next += part.count;
        smallest = part.count < smallest ? part.count : smallest;
        largest = part.count > largest ? part.count : largest;
        // The first count % parts parts carry the extra element, so empty parts come last.
        REQUIRE(part.count == count / parts + (index < count % parts ? 1 : 0));
      }
      REQUIRE(next == count);
      REQUIRE(largest - smallest <= 1);
    }
  }
}

TEST_CASE("chunk_range handles counts smaller than the number of parts", "[chunking]") {
  const Range first = chunk_range(3, 8, 0);
  CHECK(first.offset == 0);
  CHECK(first.count == 1);
  const Range last_full = chunk_range(3, 8, 2);
  CHECK(last_full.offset == 2);
  CHECK(last_full.count == 1);
  for (std::size_t index = 3; index < 8; ++index) {
    CHECK(chunk_range(3, 8, index).offset == 3);
    CHECK(chunk_range(3, 8, index).count == 0);
  }
}

TEST_CASE("slice_count gives enough slices of at most `slice` elements", "[chunking]") {
  CHECK(slice_count(0, 4) == 1);   // an empty chunk still has one (empty) stage
  CHECK(slice_count(100, 0) == 1);  // 0 means no slicing
  CHECK(slice_count(4, 4) == 1);
  CHECK(slice_count(5, 4) == 2);
  for (std::size_t count = 0; count <= 60; ++count) {
    for (std::size_t slice = 1; slice <= 13; ++slice) {
      INFO("count " << count << " slice " << slice);
      const std::size_t slices = slice_count(count, slice);
      REQUIRE(slices >= 1);
      REQUIRE(slices * slice >= count);           // enough
      if (slices > 1) REQUIRE((slices - 1) * slice < count);  // and no more than needed
    }
  }
}

TEST_CASE("slice_of cuts a range into near-equal contiguous slices within it", "[chunking]") {
  for (std::size_t offset : {0, 1, 37}) {
    for (std::size_t count = 0; count <= 50; ++count) {
      for (std::size_t slice = 0; slice <= 11; ++slice) {
        INFO("offset " << offset << " count " << count << " slice " << slice);
        const Range whole{offset, count};
        const std::size_t slices = slice_count(count, slice);
        std::size_t next = offset;
        for (std::size_t index = 0; index < slices; ++index) {
          const Range part = slice_of(whole, slices, index);
          REQUIRE(part.offset == next);
          if (slice != 0) REQUIRE(part.count <= slice);
          const std::size_t base = count / slices;
          REQUIRE((part.count == base || part.count == base + 1));
          next += part.count;
        }
        REQUIRE(next == offset + count);
      }
    }
  }
}

TEST_CASE("mod is the non-negative remainder", "[chunking]") {
  for (int n = 1; n <= 9; ++n) {
    for (int value = -3 * n; value <= 3 * n; ++value) {
      const int m = mod(value, n);
      REQUIRE(m >= 0);
      REQUIRE(m < n);
      REQUIRE((value - m) % n == 0);
    }
  }
}

}  // namespace test_chunking
