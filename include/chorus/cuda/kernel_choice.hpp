// Which kernel serves a call's chorus::Algorithm, for cuda::Team and its CPU twin alike (plain C++, no
// CUDA), so a per-rank view (team_comm.hpp) runs the same kernel on the twin as on the GPU.
#pragma once

#include <cstddef>
#include <string>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/error.hpp"
#include "kernel/collective_call.hpp"

namespace chorus::cuda {

// Where Algorithm::automatic switches kernels, in the bytes kernel_for sees (all_reduce: the whole
// buffer; all_gather and reduce_scatter: one rank's block). Each is the LARGEST size the named kernel
// still serves. The defaults are seeds from published crossovers (vLLM, TensorRT-LLM; ../shared notes),
// not measurements: chorus-cuda-bench prints measured ones in these terms (docs/cuda.md, "Choosing a
// kernel"), to set through TeamOptions::crossovers (or twin::Options::crossovers).
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
// barrier one-shot, two-shot, and the ring, at `crossovers`.
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
      throw Error(ErrorCode::unsupported, std::string("chorus::cuda::Team::all_reduce: algorithm ") + to_string(algorithm) +
                                              " has no CUDA kernel yet (one_shot, two_shot, ring, tree, automatic)");
  }
}

// Which kernel serves the other collectives: the barrier pull through staging (one step, the latency
// winner) unless ring is asked for, or automatic picks the ring for all_gather and reduce_scatter blocks
// above crossovers.gather_one_shot_max (NCCL's ring wins on bandwidth).
inline kernel::KernelAlgorithm kernel_for(Collective collective, Algorithm algorithm, std::size_t block_bytes,
                                          const KernelCrossovers& crossovers = {}) {
  switch (algorithm) {
    case Algorithm::one_shot:
    case Algorithm::direct: return kernel::KernelAlgorithm::one_shot;
    case Algorithm::ring: return kernel::KernelAlgorithm::ring;
    case Algorithm::pairwise: return kernel::KernelAlgorithm::pairwise;  // all_to_all only (supports() checks)
    case Algorithm::automatic:
      return (collective == Collective::all_gather || collective == Collective::reduce_scatter) &&
                     block_bytes > crossovers.gather_one_shot_max
                 ? kernel::KernelAlgorithm::ring
                 : kernel::KernelAlgorithm::one_shot;
    default:
      throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::cuda::Team::", to_string(collective), ": algorithm ",
                                                          to_string(algorithm), " has no CUDA kernel (one_shot, direct, ring, pairwise, automatic)"));
  }
}

}  // namespace chorus::cuda
