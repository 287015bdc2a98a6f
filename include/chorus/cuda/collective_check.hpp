// Argument checks of a team-wide collective call (every rank's buffers at once), shared by the CPU twin's
// Team and cuda::Team so both refuse the same calls with the same chorus::Error: the call, the rank and
// the bad value. Host code only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/collective.hpp"
#include "../core/error.hpp"
#include "kernel/collective_call.hpp"

namespace chorus::cuda {

struct TeamCallShape {
  const char* call;  // "cuda::Team::broadcast", ...
  Collective collective;
  kernel::KernelAlgorithm algorithm;
  int ranks;
  std::size_t count;
  std::size_t element_bytes;
  int root;
};

// `inputs` and `outputs` as void pointers: one per rank.
inline void check_team_call(const TeamCallShape& shape, const std::vector<const void*>& inputs,
                            const std::vector<void*>& outputs) {
  const auto n = static_cast<std::size_t>(shape.ranks);
  const CollectiveTraits& facts = traits(shape.collective);
  if (inputs.size() != n || outputs.size() != n) {
    throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", shape.call, ": one input and one output per rank (", n,
                                                             "), got ", inputs.size(), " and ", outputs.size()));
  }
  if (!kernel::supports(shape.collective, shape.algorithm)) {
    throw Error(ErrorCode::unsupported, detail::concat("chorus::", shape.call, ": no ", kernel::to_string(shape.algorithm),
                                                        " kernel for ", facts.name));
  }
  if (facts.rooted && (shape.root < 0 || shape.root >= shape.ranks)) {
    throw make_error(ErrorCode::invalid_argument, shape.call, 0, "root ", shape.root, " is not a rank of ", shape.ranks);
  }
  const std::size_t blocks = facts.send_per_rank || facts.recv_per_rank ? n : 1;
  if (shape.count > SIZE_MAX / shape.element_bytes / blocks) {
    throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", shape.call, ": count ", shape.count, " x ", blocks,
                                                             " blocks overflows the byte size"));
  }
  if (shape.count == 0) return;
  for (std::size_t r = 0; r < n; ++r) {
    const bool root = static_cast<int>(r) == shape.root;
    const bool needs_input = !facts.send_on_root_only || root;
    const bool needs_output = !facts.recv_on_root_only || root;
    if ((needs_input && inputs[r] == nullptr) || (needs_output && outputs[r] == nullptr)) {
      throw make_error(ErrorCode::invalid_argument, shape.call, static_cast<int>(r), "null buffer with count ", shape.count, " (the ",
                       needs_input && inputs[r] == nullptr ? "input" : "output", ")");
    }
  }
}

}  // namespace chorus::cuda
