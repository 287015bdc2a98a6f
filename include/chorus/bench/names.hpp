// The names benchmark tools accept and print: nccl-tests' spellings for types and ops (-d, -o),
// chorus' for algorithms and collectives. Unknown names throw chorus::Error listing the choices.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

// nccl-tests' type column: half, float and double rather than float16, float32, float64.
inline const char* nccl_name(DataType type) {
  switch (type) {
    case DataType::float16: return "half";
    case DataType::float32: return "float";
    case DataType::float64: return "double";
    default: return to_string(type);
  }
}

namespace detail {

inline Error unknown_name(const char* what, std::string_view text, const char* choices) {
  return Error(ErrorCode::invalid_argument,
               chorus::detail::concat("chorus::bench: unknown ", what, " \"", text, "\" (choose from ", choices, ")"));
}

// "all-reduce", "All_Reduce" and "allreduce" all read as "allreduce".
inline std::string fold_name(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '_' || c == '-') continue;
    out += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

}  // namespace detail

inline constexpr const char* kDataTypeChoices =
    "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, all";

// nccl-tests' names and chorus' own (float16, float32, float64); "all" gives the ten types in
// NCCL's numbering order, the order nccl-tests prints them.
inline std::vector<DataType> parse_data_types(std::string_view text) {
  if (text == "all") {
    std::vector<DataType> all;
    for (int t = 0; t < kDataTypeCount; ++t) all.push_back(static_cast<DataType>(t));
    return all;
  }
  for (int t = 0; t < kDataTypeCount; ++t) {
    const auto type = static_cast<DataType>(t);
    if (text == nccl_name(type) || text == to_string(type)) return {type};
  }
  throw detail::unknown_name("data type", text, kDataTypeChoices);
}

inline constexpr const char* kReduceOpChoices = "sum, prod, max, min, avg, all";

inline std::vector<ReduceOp> parse_reduce_ops(std::string_view text) {
  constexpr ReduceOp kAll[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};
  if (text == "all") return std::vector<ReduceOp>(std::begin(kAll), std::end(kAll));
  for (ReduceOp op : kAll) {
    if (text == to_string(op)) return {op};
  }
  throw detail::unknown_name("reduction op", text, kReduceOpChoices);
}

inline constexpr const char* kAlgorithmChoices =
    "automatic, ring, tree, halving_doubling, one_shot, two_shot, direct, chain, binomial, pairwise";

inline Algorithm parse_algorithm(std::string_view text) {
  const std::string name = detail::fold_name(text);
  for (int a = 0; a < kAlgorithmCount; ++a) {
    if (name == detail::fold_name(to_string(static_cast<Algorithm>(a)))) return static_cast<Algorithm>(a);
  }
  throw detail::unknown_name("algorithm", text, kAlgorithmChoices);
}

inline constexpr const char* kCollectiveChoices =
    "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all";

inline Collective parse_collective(std::string_view text) {
  const std::string name = detail::fold_name(text);
  for (Collective c : kCollectives) {
    if (name == detail::fold_name(to_string(c))) return c;
  }
  throw detail::unknown_name("collective", text, kCollectiveChoices);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
