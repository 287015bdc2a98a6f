// All ten data types and every ReduceOp through shm::Comm, compared bit for bit with host::Comm
// running the same algorithm on the same inputs (both run the one step interpreter over the same
// schedule, so the bits must be identical, half and bfloat16 rounding included).
#include <catch2/catch.hpp>

#include <chorus/host.hpp>
#include <chorus/shm.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shm/process_harness.hpp"

namespace test_shm_types {

using chorus::Algorithm;
using chorus::DataType;
using chorus::ReduceOp;

// Rank r's input bytes for `type`: small values (exact in every type, products included) with some
// variety per rank and element; raw bytes for the floating types would include NaNs and make the
// comparison about NaN payloads instead.
std::vector<std::byte> input(DataType type, int rank, std::size_t count) {
  const std::size_t size = chorus::size_of(type);
  std::vector<std::byte> bytes(count * size);
  for (std::size_t i = 0; i < count; ++i) {
    const int v = static_cast<int>((rank * 5 + i * 3) % 7) - (type == DataType::uint8 || type == DataType::uint32 || type == DataType::uint64 ? 0 : 3);
    std::byte* at = bytes.data() + i * size;
    switch (type) {
      case DataType::int8: { const auto x = static_cast<std::int8_t>(v); std::memcpy(at, &x, size); break; }
      case DataType::uint8: { const auto x = static_cast<std::uint8_t>(v); std::memcpy(at, &x, size); break; }
      case DataType::int32: { const auto x = static_cast<std::int32_t>(v); std::memcpy(at, &x, size); break; }
      case DataType::uint32: { const auto x = static_cast<std::uint32_t>(v); std::memcpy(at, &x, size); break; }
      case DataType::int64: { const auto x = static_cast<std::int64_t>(v); std::memcpy(at, &x, size); break; }
      case DataType::uint64: { const auto x = static_cast<std::uint64_t>(v); std::memcpy(at, &x, size); break; }
      case DataType::float16: { const chorus::half x(static_cast<float>(v) * 0.37f); std::memcpy(at, &x, size); break; }
      case DataType::float32: { const float x = static_cast<float>(v) * 0.37f; std::memcpy(at, &x, size); break; }
      case DataType::float64: { const double x = v * 0.37; std::memcpy(at, &x, size); break; }
      case DataType::bfloat16: { const chorus::bfloat16 x(static_cast<float>(v) * 0.37f); std::memcpy(at, &x, size); break; }
    }
  }
  return bytes;
}

TEST_CASE("shm::Comm: every type and op gives host::Comm's bits, ring and one_shot, 3 processes") {
  constexpr std::size_t kCount = 3001;  // several 4 KiB slots for every type
  const auto results = shm_harness::run_processes(3, [&](chorus::bootstrap::Store& store, int rank, int size) {
    chorus::shm::Options options;
    options.slot_bytes = 4096;
    chorus::shm::Comm comm(store, rank, size, options);
    std::vector<std::string> failures;
    for (int t = 0; t < chorus::kDataTypeCount; ++t) {
      const auto type = static_cast<DataType>(t);
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
        for (Algorithm algorithm : {Algorithm::ring, Algorithm::one_shot}) {
          const std::vector<std::byte> in = input(type, rank, kCount);
          std::vector<std::byte> got(in.size());
          comm.all_reduce(in.data(), got.data(), kCount, type, op, algorithm);
          // The same call on host threads (a Team of `size` inside this child), this rank's result.
          std::vector<std::byte> want(in.size());
          chorus::host::Team team(size);
          team.run([&](chorus::host::Comm& threads) {
            const std::vector<std::byte> theirs = input(type, threads.rank(), kCount);
            std::vector<std::byte> out(theirs.size());
            threads.all_reduce(theirs.data(), out.data(), kCount, type, op, algorithm);
            if (threads.rank() == rank) want = out;
          });
          if (got != want) {
            failures.push_back(chorus::detail::concat(chorus::to_string(type), " ", chorus::to_string(op), " ",
                                                      chorus::to_string(algorithm), ": bits differ from host::Comm's"));
          }
        }
      }
    }
    return failures;
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r);
    CHECK(results[r].report == "");
    CHECK(results[r].exit_code == 0);
  }
}

}  // namespace test_shm_types
