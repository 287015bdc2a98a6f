// Shared helpers for the host backend tests: the element types (all ten; four under ThreadSanitizer),
// inputs whose reductions are exact in any order (so results can be compared bit for bit), a reference
// computed on the main thread, and a guarded Team::run that fails instead of hanging.
#pragma once

#include <chorus/host.hpp>
#include <chorus/host/tuning.hpp>

#include "../support/sanitizers.hpp"
#include "../support/scoped_env.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace harness {

using chorus::ReduceOp;

using AllTypes = std::tuple<std::int8_t, std::uint8_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t,
                            chorus::half, float, double, chorus::bfloat16>;
// Under ThreadSanitizer (each call 5-15x slower, and looking for races, which do not depend on the element
// type) the type loops take one of each width and kind the code treats differently: a byte, a 32-bit
// integer, a 16-bit float (converted to float and back) and float. The release and ASan+UBSan stages run
// all ten.
using Types = std::conditional_t<chorus::test::kThreadSanitized,
                                 std::tuple<std::int8_t, std::int32_t, chorus::half, float>, AllTypes>;

// Calls fn(T{}, index) for each of the types: all ten, or under ThreadSanitizer the four above.
template <class Fn>
void for_each_type(Fn&& fn) {
  std::apply([&](auto... types) {
    int index = 0;
    (fn(types, index++), ...);
  }, Types{});
}

template <class T>
const char* type_name() {
  return chorus::to_string(chorus::data_type_v<T>);
}

inline constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};
inline constexpr chorus::Algorithm kAlgorithms[] = {
    chorus::Algorithm::automatic, chorus::Algorithm::ring,     chorus::Algorithm::tree,
    chorus::Algorithm::halving_doubling, chorus::Algorithm::one_shot, chorus::Algorithm::two_shot};

inline std::vector<int> rank_counts() { return {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}; }

// 0, 1, 2, 3, primes, counts just below and above the rank count, and one past 1000.
inline std::vector<std::size_t> awkward_counts(int ranks) {
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::size_t> counts = {0, 1, 2, 3, 7, 13, n - 1, n + 1, 1019};
  std::vector<std::size_t> unique;
  for (std::size_t c : counts) {
    bool seen = false;
    for (std::size_t u : unique) seen = seen || u == c;
    if (!seen) unique.push_back(c);
  }
  return unique;
}

template <class T>
constexpr bool is_signed_type() {
  return !std::is_same<T, std::uint8_t>::value && !std::is_same<T, std::uint32_t>::value &&
         !std::is_same<T, std::uint64_t>::value;
}

template <class T>
T from_int(int value) {
  if constexpr (std::is_same<T, chorus::half>::value || std::is_same<T, chorus::bfloat16>::value) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// Small integers: every partial sum or product stays exact in every type (int8, and bfloat16's
// 8-bit mantissa, included) for up to 16 ranks, so any reduction order gives the same bits.
template <class T>
T input_value(ReduceOp op, int rank, std::size_t i) {
  const auto r = static_cast<std::size_t>(rank);
  const int shift = is_signed_type<T>() ? 1 : 0;
  switch (op) {
    case ReduceOp::prod: return from_int<T>((i + r) % 8 == 0 ? 2 : 1);  // at most two 2s per element
    case ReduceOp::min:
    case ReduceOp::max: return from_int<T>(static_cast<int>((r * 13 + i * 5) % 11) - 5 * shift);
    default: return from_int<T>(static_cast<int>((r * 7 + i * 3) % 5) - 2 * shift);
  }
}

template <class T>
std::vector<T> inputs(ReduceOp op, int rank, std::size_t count, std::size_t offset = 0) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = input_value<T>(op, rank, offset + i);
  return values;
}

// A value no correct result has (so unwritten output shows up).
template <class T>
T sentinel() {
  return from_int<T>(99);
}

// fold over ranks 0..ranks-1 of element i, as the contract says (acc on the left), then avg's divide.
template <class T>
T reference_value(ReduceOp op, int ranks, std::size_t i) {
  T acc = input_value<T>(op, 0, i);
  for (int r = 1; r < ranks; ++r) acc = chorus::combine(op, acc, input_value<T>(op, r, i));
  return op == ReduceOp::avg ? chorus::divide_by(acc, ranks) : acc;
}

template <class T>
std::vector<T> reference(ReduceOp op, int ranks, std::size_t count, std::size_t offset = 0) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = reference_value<T>(op, ranks, offset + i);
  return values;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
std::string show(const std::vector<T>& values, std::size_t limit = 12) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size() && i < limit; ++i) {
    if (i > 0) text += ", ";
    if constexpr (std::is_same<T, chorus::half>::value || std::is_same<T, chorus::bfloat16>::value) {
      text += std::to_string(static_cast<float>(values[i]));
    } else if constexpr (sizeof(T) == 1) {
      text += std::to_string(static_cast<int>(values[i]));
    } else {
      text += std::to_string(values[i]);
    }
  }
  if (values.size() > limit) text += ", ...";
  return text + "]";
}

// Team::run on another thread; a run that outlives `limit` is a hang: report and stop the
// process, since its threads cannot be cancelled. Exceptions from the run propagate.
template <class Fn>
void run(chorus::host::Team& team, Fn&& fn, std::chrono::seconds limit = std::chrono::seconds(300)) {
  auto done = std::async(std::launch::async, [&] { team.run(fn); });
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: Team::run did not finish within %lld s (hang)\n",
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  done.get();
}

// Elements of T in one pipelining slice of the host backend: tests that cross slice boundaries
// size their buffers from it.
template <class T>
constexpr std::size_t slice_elements() {
  return chorus::host::detail::Tuning::kSliceBytes / sizeof(T);
}

using support::ScopedEnv;

}  // namespace harness

namespace harness {

// An algorithm to force through the public API; automatic lets the backend choose.
struct Variant {
  chorus::Algorithm algorithm = chorus::Algorithm::automatic;
  const char* name() const { return chorus::to_string(algorithm); }
};

// automatic, then every algorithm that implements `collective`.
inline std::vector<Variant> variants(chorus::Collective collective) {
  std::vector<Variant> list;
  for (int a = 0; a < chorus::kAlgorithmCount; ++a) {
    const auto algorithm = static_cast<chorus::Algorithm>(a);
    if (chorus::supports(collective, algorithm)) list.push_back(Variant{algorithm});
  }
  return list;
}

// Whether this (rank count, count index, type, op, variant) combination runs: all of them up to
// 4 ranks, above that one op per (count, type, variant), rotating so each op still appears.
inline bool sampled(int ranks, std::size_t count_index, int type_index, int op_index, int variant_index) {
  return ranks <= 4 || op_index == static_cast<int>((count_index + static_cast<std::size_t>(type_index) +
                                                     static_cast<std::size_t>(variant_index)) % 5);
}

}  // namespace harness
