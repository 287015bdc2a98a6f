// Which kernel serves a call's chorus::Algorithm, for cuda::Team and its CPU twin alike (plain C++, no
// CUDA), so a per-rank view (team_comm.hpp) runs the same kernel on the twin as on the GPU.
#pragma once

#include <cstddef>
#include <string>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/collective_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Where Algorithm::automatic switches kernels, in the bytes kernel_for sees (all_reduce: the whole
// buffer; all_gather and reduce_scatter: one rank's block). Each is the LARGEST size the named kernel
// still serves. The defaults are seeds from published crossovers (vLLM, TensorRT-LLM; docs/references.md),
// not measurements: chorus-cuda-bench prints measured ones in these terms
// (docs/cuda/choosing-a-kernel.md), to set through TeamOptions::crossovers (or twin::Options::crossovers).
struct KernelCrossovers {
  std::size_t ll_max = 16u << 10;                    // all_reduce: LL one-shot up to here
  std::size_t one_shot_max_small_team = 512u << 10;  // all_reduce: then barrier one-shot, teams of <= small_team_ranks
  std::size_t one_shot_max = 256u << 10;             // ... and larger teams (each rank reads n-1 peers' whole buffers)
  int small_team_ranks = 4;                          // where the two one-shot thresholds part
  std::size_t two_shot_max = 8u << 20;               // all_reduce: then two-shot up to here, the ring above
  std::size_t gather_one_shot_max = 1u << 20;        // all_gather, reduce_scatter: one-shot up to here, the ring above
};

inline bool operator==(const KernelCrossovers& a, const KernelCrossovers& b) {
  return a.ll_max == b.ll_max && a.one_shot_max_small_team == b.one_shot_max_small_team && a.one_shot_max == b.one_shot_max &&
         a.small_team_ranks == b.small_team_ranks && a.two_shot_max == b.two_shot_max && a.gather_one_shot_max == b.gather_one_shot_max;
}
inline bool operator!=(const KernelCrossovers& a, const KernelCrossovers& b) { return !(a == b); }

// The all_reduce one-shot threshold for a team of `ranks`.
inline std::size_t one_shot_max_for(const KernelCrossovers& crossovers, int ranks) {
  return ranks <= crossovers.small_team_ranks ? crossovers.one_shot_max_small_team : crossovers.one_shot_max;
}

// Refuses crossovers automatic could not follow: the all_reduce tiers must not overlap out of order (LL,
// then one-shot, then two-shot, each threshold at least the one before; equal thresholds leave a kernel
// out), and small_team_ranks is a rank count. `call` names the team being made.
inline void check_crossovers(const KernelCrossovers& c, const char* call) {
  const auto refuse = [&](const char* what, std::size_t value, const char* other, std::size_t bound) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::", call, ": crossovers.", what, " = ", value, " is below crossovers.", other, " = ",
                                       bound, " (automatic's thresholds must grow: ll_max <= one_shot_max* <= two_shot_max)"));
  };
  if (c.small_team_ranks < 0) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::", call, ": crossovers.small_team_ranks must be >= 0, got ",
                                                                    c.small_team_ranks));
  }
  if (c.one_shot_max_small_team < c.ll_max) refuse("one_shot_max_small_team", c.one_shot_max_small_team, "ll_max", c.ll_max);
  if (c.one_shot_max < c.ll_max) refuse("one_shot_max", c.one_shot_max, "ll_max", c.ll_max);
  if (c.two_shot_max < c.one_shot_max_small_team) {
    refuse("two_shot_max", c.two_shot_max, "one_shot_max_small_team", c.one_shot_max_small_team);
  }
  if (c.two_shot_max < c.one_shot_max) refuse("two_shot_max", c.two_shot_max, "one_shot_max", c.one_shot_max);
}

// Which kernel serves all_reduce: Algorithm::automatic takes LL for the smallest messages, then the
// barrier one-shot, two-shot, and the ring, at `crossovers`; the others name the kernel that runs their
// schedule. An Algorithm core's table (chorus::supports) does not give all_reduce is invalid_argument, as
// on every backend; one with no kernel (halving_doubling) is unsupported.
inline kernel::KernelAlgorithm kernel_for(Algorithm algorithm, std::size_t bytes, int ranks,
                                          const KernelCrossovers& crossovers = {}) {
  switch (algorithm) {
    case Algorithm::one_shot: return kernel::KernelAlgorithm::one_shot;
    case Algorithm::two_shot: return kernel::KernelAlgorithm::two_shot;
    case Algorithm::ring: return kernel::KernelAlgorithm::ring;
    case Algorithm::tree: return kernel::KernelAlgorithm::tree;
    case Algorithm::automatic:
      if (bytes <= crossovers.ll_max) return kernel::KernelAlgorithm::ll_one_shot;
      if (bytes <= one_shot_max_for(crossovers, ranks)) return kernel::KernelAlgorithm::one_shot;
      if (bytes <= crossovers.two_shot_max) return kernel::KernelAlgorithm::two_shot;
      return kernel::KernelAlgorithm::ring;
    default:
      break;
  }
  if (!supports(Collective::all_reduce, algorithm)) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::cuda::all_reduce: algorithm ", to_string(algorithm),
                                                                    " does not implement all_reduce (choose from ",
                                                                    algorithm_choices(Collective::all_reduce), ")"));
  }
  throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::cuda::all_reduce: algorithm ", to_string(algorithm),
                                                             " has no CUDA kernel (automatic, one_shot, two_shot, ring, tree)"));
}

// Which kernel serves the other collectives, each Algorithm meaning what it means on every backend
// (chorus::supports): all_gather and reduce_scatter take direct (the barrier pull through staging, one
// step: the one-shot kernel) or ring; broadcast and reduce take chain (the pipelined chain along the ring:
// the kernel named ring for them); all_to_all takes pairwise. automatic takes the one-shot kernel, or the
// ring for all_gather and reduce_scatter blocks above crossovers.gather_one_shot_max (NCCL's ring wins on
// bandwidth).
inline kernel::KernelAlgorithm kernel_for(Collective collective, Algorithm algorithm, std::size_t block_bytes,
                                          const KernelCrossovers& crossovers = {}) {
  if (collective == Collective::all_reduce) return kernel_for(algorithm, block_bytes, 0, crossovers);
  if (!supports(collective, algorithm)) {
    throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::cuda::", to_string(collective), ": algorithm ",
                                                                    to_string(algorithm), " does not implement ", to_string(collective),
                                                                    " (choose from ", algorithm_choices(collective), ")"));
  }
  switch (algorithm) {
    case Algorithm::automatic:
      return (collective == Collective::all_gather || collective == Collective::reduce_scatter) &&
                     block_bytes > crossovers.gather_one_shot_max
                 ? kernel::KernelAlgorithm::ring
                 : kernel::KernelAlgorithm::one_shot;
    case Algorithm::direct: return kernel::KernelAlgorithm::one_shot;
    case Algorithm::ring:
    case Algorithm::chain: return kernel::KernelAlgorithm::ring;
    case Algorithm::pairwise: return kernel::KernelAlgorithm::pairwise;
    default:
      throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::cuda::", to_string(collective), ": algorithm ",
                                                                 to_string(algorithm), " has no CUDA kernel"));
  }
}

// The kernel a call runs: every device communicator (a team's calls, its per-rank views, IpcComm) maps a
// call's Algorithm here, so each means the same on all of them. `bytes`: all_reduce's whole buffer, the
// other collectives' count x element size.
inline kernel::KernelAlgorithm kernel_for_call(Collective collective, Algorithm algorithm, std::size_t bytes, int ranks,
                                               const KernelCrossovers& crossovers = {}) {
  return collective == Collective::all_reduce ? kernel_for(algorithm, bytes, ranks, crossovers)
                                              : kernel_for(collective, algorithm, bytes, crossovers);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
