// mpi::NativeComm's reductions give chorus's documented bits (chorus::combine, the host backend's
// rule) for every type and op: 8-bit sums and products wrap around, never saturate (Open MPI 4.1's
// AVX reduction component saturates int8/uint8 sums on its vectorised paths, issue 24 §3). The
// counts include ones long enough for MPI's vectorised loops, and the 8-bit inputs overflow.
// Floating-point inputs are small integers, so every order of the additions gives the same bits
// (NativeComm's float order is MPI's).
#include <catch2/catch.hpp>

#include <chorus/mpi.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi_harness.hpp"

using chorus::ReduceOp;
using mpi_harness::gather_strings;

namespace {

// Rank r's element i.
template <class T>
T input(int rank, std::size_t i) {
  if constexpr (std::is_integral<T>::value && sizeof(T) == 1) {
    // 100..250 and beyond: two ranks' values overflow 8 bits (and int8's range) in sum and product.
    return static_cast<T>(static_cast<unsigned>(100 + 50 * rank + static_cast<int>(i % 7) * 13));
  } else if constexpr (std::is_integral<T>::value) {
    return static_cast<T>((static_cast<std::size_t>(rank) * 3 + i) % 7 + 1);
  } else {
    return T(static_cast<float>(static_cast<int>((static_cast<std::size_t>(rank) * 3 + i) % 5) - 2));
  }
}

template <class T>
T expected(ReduceOp op, std::size_t i, int ranks) {
  T acc = input<T>(0, i);
  for (int r = 1; r < ranks; ++r) acc = chorus::combine(op, acc, input<T>(r, i));
  return op == ReduceOp::avg ? chorus::divide_by(acc, ranks) : acc;
}

template <class T>
std::string bits(T value) {
  std::uint64_t raw = 0;
  std::memcpy(&raw, &value, sizeof(T));
  return chorus::detail::concat("0x", std::hex, raw);
}

template <class T>
void compare(const char* what, ReduceOp op, std::size_t count, const std::vector<T>& got, std::size_t first,
             int ranks, int me, std::vector<std::string>& failures) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const T want = expected<T>(op, first + i, ranks);
    if (std::memcmp(&got[i], &want, sizeof(T)) != 0) {
      failures.push_back(chorus::detail::concat(what, " ", chorus::to_string(chorus::data_type_of<T>::value), " ",
                                                chorus::to_string(op), " count ", count, " on rank ", me,
                                                ": element ", first + i, " is ", bits(got[i]), ", expected ",
                                                bits(want)));
      return;  // one line per call
    }
  }
}

template <class T>
void check_type(chorus::mpi::NativeComm& comm, std::vector<std::string>& failures) {
  const int n = comm.size(), me = comm.rank();
  for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}, std::size_t{4099}}) {
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
      std::vector<T> mine(count * static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = input<T>(me, i);
      std::vector<T> out(count);
      comm.all_reduce(mine.data(), out.data(), count, op);
      compare("all_reduce", op, count, out, 0, n, me, failures);
      std::vector<T> in_place(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(count));
      comm.all_reduce(in_place.data(), in_place.data(), count, op);
      compare("in-place all_reduce", op, count, in_place, 0, n, me, failures);
      const int root = n - 1;
      std::vector<T> reduced(count);
      comm.reduce(mine.data(), reduced.data(), count, op, root);
      if (me == root) compare("reduce", op, count, reduced, 0, n, me, failures);
      std::vector<T> block(count);
      comm.reduce_scatter(mine.data(), block.data(), count, op);
      compare("reduce_scatter", op, count, block, count * static_cast<std::size_t>(me), n, me, failures);
    }
  }
}

}  // namespace

TEST_CASE("NativeComm reduces every type and op to chorus's bits; 8-bit sums wrap", "[mpi][native][reduce]") {
  const mpi_harness::Settle settle;
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  std::vector<std::string> failures;
  check_type<std::int8_t>(comm, failures);
  check_type<std::uint8_t>(comm, failures);
  check_type<std::int32_t>(comm, failures);
  check_type<std::uint32_t>(comm, failures);
  check_type<std::int64_t>(comm, failures);
  check_type<std::uint64_t>(comm, failures);
  check_type<float>(comm, failures);
  check_type<double>(comm, failures);
  check_type<chorus::half>(comm, failures);
  check_type<chorus::bfloat16>(comm, failures);
  CHECK(gather_strings(failures) == std::vector<std::string>{});
}

TEST_CASE("uint8 200 + 201 is 145 on NativeComm at every count", "[mpi][native][reduce]") {
  const mpi_harness::Settle settle;
  chorus::mpi::NativeComm comm(MPI_COMM_WORLD);
  for (const std::size_t count : {std::size_t{1}, std::size_t{64}, std::size_t{4099}}) {
    std::vector<std::uint8_t> data(count, comm.rank() == 0 ? 200 : comm.rank() == 1 ? 201 : 0);
    comm.all_reduce(data.data(), data.data(), count, ReduceOp::sum);
    INFO("count " << count << " rank " << comm.rank());
    CHECK(static_cast<int>(data[count - 1]) == (comm.size() >= 2 ? 145 : 200));
    CHECK(static_cast<int>(data[0]) == (comm.size() >= 2 ? 145 : 200));
  }
}
