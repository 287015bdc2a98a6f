// Argument checks of a collective call of chorus's kernels (a team's, every rank's buffers at once; or one
// rank's, IpcComm's), shared by the communicators written over a Device so the GPU and the CPU twin refuse
// the same calls with the same chorus::Error: the call, the rank and the bad value. Host code only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../runtime/call_check.hpp"
#include "kernel/collective_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

struct TeamCallShape {
  const char* call;  // "cuda::Team::broadcast", ...
  Collective collective;
  kernel::KernelAlgorithm algorithm;
  int ranks;
  std::size_t count;
  std::size_t element_bytes;
  int root;
};

// What does not depend on the buffers: a kernel for the collective, a root that is a rank, a byte size
// that fits.
inline void check_call_shape(const TeamCallShape& shape) {
  const auto n = static_cast<std::size_t>(shape.ranks);
  const CollectiveTraits& facts = traits(shape.collective);
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
}

// Rank `rank`'s buffers: null only where the collective does not touch them (or count is 0).
inline void check_rank_buffers(const TeamCallShape& shape, int rank, const void* input, const void* output) {
  if (shape.count == 0) return;
  const CollectiveTraits& facts = traits(shape.collective);
  const bool root = rank == shape.root;
  const bool needs_input = !facts.send_on_root_only || root;
  const bool needs_output = !facts.recv_on_root_only || root;
  if ((needs_input && input == nullptr) || (needs_output && output == nullptr)) {
    throw make_error(ErrorCode::invalid_argument, shape.call, rank, "null buffer with count ", shape.count, " (the ",
                     needs_input && input == nullptr ? "input" : "output", ")");
  }
}

// `inputs` and `outputs` as void pointers: one per rank.
inline void check_team_call(const TeamCallShape& shape, const std::vector<const void*>& inputs,
                            const std::vector<void*>& outputs) {
  const auto n = static_cast<std::size_t>(shape.ranks);
  if (inputs.size() != n || outputs.size() != n) {
    throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", shape.call, ": one input and one output per rank (", n,
                                                             "), got ", inputs.size(), " and ", outputs.size()));
  }
  check_call_shape(shape);
  for (std::size_t r = 0; r < n; ++r) check_rank_buffers(shape, static_cast<int>(r), inputs[r], outputs[r]);
}

// One rank's own call (a communicator of one rank per process): the shape, and this rank's buffers only;
// whether the other ranks made the same call is not known here (see docs/cuda/ipc.md).
inline void check_rank_call(const TeamCallShape& shape, int rank, const void* input, const void* output) {
  check_call_shape(shape);
  check_rank_buffers(shape, rank, input, output);
}

// One rank's arguments through the runtime's check (runtime/call_check.hpp: what host::Comm checks: type,
// op, algorithm, root, null buffers, sizes, overlapping buffers), its error worded as `call`:
// "chorus::cuda::IpcComm::all_reduce on rank 1: ...".
inline void check_rank_collective(const char* call, int rank, int ranks, const runtime::CollectiveArgs& args) {
  try {
    (void)runtime::check_collective(args, rank, ranks);
  } catch (const Error& e) {
    std::string message = e.what();
    const std::string generic = detail::concat("chorus::", traits(args.collective).name);
    if (message.compare(0, generic.size(), generic) == 0) message.replace(0, generic.size(), detail::concat("chorus::", call));
    throw Error(e.code(), message);
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
