// broadcast_parameters: make every rank's parameters bitwise equal to the root's, after checking
// that every rank holds the same tensors (PyTorch DDP's construction: _verify_param_shape_across_
// processes, then a broadcast from rank 0). verify_parameter_shapes is the check alone.
//
// A mismatch throws chorus::Error (mismatch) on every rank with the same message, naming the first
// tensor that differs, the ranks involved and what each holds, e.g.
//   chorus::parallel::verify_parameter_shapes on rank 2: tensor 1 'fc.bias': rank 0 has 10 float32
//   elements, rank 1 has 12 float32 elements
// All ranks communicate the same amount before deciding, so none is left waiting.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "param_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {
namespace detail {

inline constexpr std::uint64_t kAbsent = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::size_t kNameBytes = 64;  // names in a mismatch message are cut to this

inline std::string describe_held(std::uint64_t count, std::uint64_t type, int tensors) {
  if (count == kAbsent) return chorus::detail::concat("no such tensor (it has ", tensors, ")");
  return chorus::detail::concat(count, " ", to_string(static_cast<DataType>(type)), " elements");
}

template <class Comm>
void check_not_empty(const Comm& comm, const char* call) {
  if (comm.size() < 1) {
    throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "the communicator has no ranks");
  }
}

template <class Comm>
void check_views(const Comm& comm, const std::vector<ParamView>& views, const char* call) {
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (views[i].data == nullptr && views[i].count > 0) {
      throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "tensor ", i, " '", views[i].name,
                       "' has ", views[i].count, " elements and a null pointer");
    }
  }
}

}  // namespace detail

template <class Comm>
void verify_parameter_shapes(Comm& comm, const std::vector<ParamView>& params) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::verify_parameter_shapes needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // gathers the shapes into host vectors and compares them on the CPU
  const char* call = "parallel::verify_parameter_shapes";
  detail::check_not_empty(comm, call);
  const auto n = static_cast<std::size_t>(comm.size());
  const std::uint64_t mine = params.size();
  std::vector<std::uint64_t> tensor_counts(n);
  comm.all_gather(&mine, tensor_counts.data(), 1);
  const std::size_t most = static_cast<std::size_t>(*std::max_element(tensor_counts.begin(), tensor_counts.end()));

  // (count, type) per tensor, padded to the longest list so every rank gathers the same amount.
  std::vector<std::uint64_t> described(2 * most, detail::kAbsent), all(2 * most * n);
  for (std::size_t i = 0; i < params.size(); ++i) {
    described[2 * i] = params[i].count;
    described[2 * i + 1] = static_cast<std::uint64_t>(params[i].type);
  }
  comm.all_gather(described.data(), all.data(), described.size());
  auto at = [&](std::size_t rank, std::size_t i, std::size_t field) { return all[rank * 2 * most + 2 * i + field]; };

  for (std::size_t i = 0; i < most; ++i) {
    for (std::size_t r = 1; r < n; ++r) {
      if (at(r, i, 0) == at(0, i, 0) && at(r, i, 1) == at(0, i, 1)) continue;
      // Every rank found the same (i, r): swap names of tensor i so the message is the same everywhere.
      std::vector<std::uint8_t> name(detail::kNameBytes, 0), names(detail::kNameBytes * n);
      if (i < params.size()) std::copy_n(params[i].name.begin(), std::min(params[i].name.size(), name.size() - 1), name.begin());
      comm.all_gather(name.data(), names.data(), name.size());
      const std::uint8_t* holder = names.data() + (at(0, i, 0) != detail::kAbsent ? 0 : r * detail::kNameBytes);
      const std::string known(reinterpret_cast<const char*>(holder));
      throw make_error(ErrorCode::mismatch, call, comm.rank(), "tensor ", i, " '", known, "': rank 0 has ",
                       detail::describe_held(at(0, i, 0), at(0, i, 1), static_cast<int>(tensor_counts[0])), ", rank ",
                       r, " has ", detail::describe_held(at(r, i, 0), at(r, i, 1), static_cast<int>(tensor_counts[r])));
    }
  }
}

// Collective: checks shapes, then copies the root's values into every rank's tensors, in place.
template <class Comm>
void broadcast_parameters(Comm& comm, const std::vector<ParamView>& params, int root = 0) {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::broadcast_parameters needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // verify_parameter_shapes first
  const char* call = "parallel::broadcast_parameters";
  detail::check_not_empty(comm, call);
  if (root < 0 || root >= comm.size()) {
    throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "root ", root, " is outside a communicator of ",
                     comm.size(), " ranks");
  }
  detail::check_views(comm, params, call);
  verify_parameter_shapes(comm, params);
  for (const ParamView& p : params) comm.broadcast(p.data, p.data, p.count, p.type, root);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
