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

// Which kernel serves Algorithm::automatic: LL for the smallest messages, then the barrier one-shot,
// two-shot, and the ring (seeds from published crossovers, ../shared notes; tune with chorus-bench).
inline kernel::KernelAlgorithm kernel_for(Algorithm algorithm, std::size_t bytes, int ranks) {
  switch (algorithm) {
    case Algorithm::one_shot: return kernel::KernelAlgorithm::one_shot;
    case Algorithm::two_shot: return kernel::KernelAlgorithm::two_shot;
    case Algorithm::ring: return kernel::KernelAlgorithm::ring;
    case Algorithm::tree: return kernel::KernelAlgorithm::tree;
    case Algorithm::automatic:
      if (bytes <= (16u << 10)) return kernel::KernelAlgorithm::ll_one_shot;
      if (bytes <= (ranks <= 4 ? (512u << 10) : (256u << 10))) return kernel::KernelAlgorithm::one_shot;
      if (bytes <= (8u << 20)) return kernel::KernelAlgorithm::two_shot;
      return kernel::KernelAlgorithm::ring;
    default:
      throw Error(ErrorCode::unsupported, std::string("chorus::cuda::Team::all_reduce: algorithm ") + to_string(algorithm) +
                                              " has no CUDA kernel yet (one_shot, two_shot, ring, tree, automatic)");
  }
}

// Which kernel serves the other collectives: the barrier pull through staging (one step, the latency
// winner) unless ring is asked for, or automatic picks the ring for all_gather and reduce_scatter blocks
// above 1 MiB (an untuned seed, as NCCL's ring wins on bandwidth; tune with chorus-bench on a GPU).
inline kernel::KernelAlgorithm kernel_for(Collective collective, Algorithm algorithm, std::size_t block_bytes) {
  switch (algorithm) {
    case Algorithm::one_shot:
    case Algorithm::direct: return kernel::KernelAlgorithm::one_shot;
    case Algorithm::ring: return kernel::KernelAlgorithm::ring;
    case Algorithm::pairwise: return kernel::KernelAlgorithm::pairwise;  // all_to_all only (supports() checks)
    case Algorithm::automatic:
      return (collective == Collective::all_gather || collective == Collective::reduce_scatter) && block_bytes > (1u << 20)
                 ? kernel::KernelAlgorithm::ring
                 : kernel::KernelAlgorithm::one_shot;
    default:
      throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::cuda::Team::", to_string(collective), ": algorithm ",
                                                          to_string(algorithm), " has no CUDA kernel (one_shot, direct, ring, pairwise, automatic)"));
  }
}

}  // namespace chorus::cuda
