// What chorus-cuda-bench sweeps, in plain C++ (no CUDA) so it is tested on the CPU: which kernels serve
// each collective (cuda::Team refuses the others, kernel::supports), what Algorithm::automatic would pick
// for a row (kernel_for, as the Team calls it), and the names the tool takes on its command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/collective_call.hpp"
#include "kernel_choice.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::sweep {

// A collective, or the ring exchange through Team::transfer (each rank sends to the next, receives from
// the previous), which is no Collective.
enum class Target { all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, sendrecv };
inline constexpr Target kTargets[] = {Target::all_reduce, Target::broadcast,  Target::reduce,  Target::all_gather,
                                      Target::reduce_scatter, Target::all_to_all, Target::sendrecv};

inline const char* to_string(Target target) {
  switch (target) {
    case Target::all_reduce: return "all_reduce";
    case Target::broadcast: return "broadcast";
    case Target::reduce: return "reduce";
    case Target::all_gather: return "all_gather";
    case Target::reduce_scatter: return "reduce_scatter";
    case Target::all_to_all: return "all_to_all";
    case Target::sendrecv: return "sendrecv";
  }
  return "unknown";
}

// The names -c takes: every target, and "all".
inline std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (Target target : kTargets) names.emplace_back(to_string(target));
  names.emplace_back("all");
  return names;
}

// "all": every target in kTargets' order; otherwise the one named.
inline std::vector<Target> parse_targets(const std::string& name) {
  if (name == "all") return std::vector<Target>(std::begin(kTargets), std::end(kTargets));
  for (Target target : kTargets) {
    if (name == to_string(target)) return {target};
  }
  std::string known;
  for (const std::string& n : target_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus-cuda-bench: no collective '", name, "' (", known, ")"));
}

inline bool is_collective(Target target) { return target != Target::sendrecv; }

// The Collective a target is; sendrecv has none (check is_collective first).
inline Collective collective_of(Target target) {
  switch (target) {
    case Target::all_reduce: return Collective::all_reduce;
    case Target::broadcast: return Collective::broadcast;
    case Target::reduce: return Collective::reduce;
    case Target::all_gather: return Collective::all_gather;
    case Target::reduce_scatter: return Collective::reduce_scatter;
    case Target::all_to_all: return Collective::all_to_all;
    case Target::sendrecv: break;
  }
  throw Error(ErrorCode::invalid_argument, "chorus-cuda-bench: sendrecv is no collective (Team::transfer)");
}

// Every kernel, in the order automatic climbs all_reduce's (LL, one-shot, two-shot, ring), then the rest.
inline constexpr kernel::KernelAlgorithm kKernels[] = {kernel::KernelAlgorithm::ll_one_shot, kernel::KernelAlgorithm::one_shot,
                                                       kernel::KernelAlgorithm::two_shot,    kernel::KernelAlgorithm::ring,
                                                       kernel::KernelAlgorithm::tree,        kernel::KernelAlgorithm::pairwise};

// The kernels that serve a target: those kernel::supports admits (sendrecv: the p2p kernel alone, which
// the Team labels pairwise).
inline std::vector<kernel::KernelAlgorithm> kernels_for(Target target) {
  if (!is_collective(target)) return {kernel::KernelAlgorithm::pairwise};
  std::vector<kernel::KernelAlgorithm> kernels;
  for (kernel::KernelAlgorithm k : kKernels) {
    if (kernel::supports(collective_of(target), k)) kernels.push_back(k);
  }
  return kernels;
}

// The bytes kernel_for sees for a call of `count` elements (all_reduce, broadcast, reduce: the buffer;
// all_gather, reduce_scatter: one rank's block; all_to_all: one peer's): count x element size, as the
// Team's calls compute it.
inline std::size_t choice_bytes(std::size_t count, std::size_t element_size) { return count * element_size; }

// The kernel Algorithm::automatic runs for a call of `count` elements on `ranks` at `crossovers`.
inline kernel::KernelAlgorithm automatic_kernel(Collective collective, std::size_t count, std::size_t element_size, int ranks,
                                                const KernelCrossovers& crossovers) {
  const std::size_t bytes = choice_bytes(count, element_size);
  return collective == Collective::all_reduce ? kernel_for(Algorithm::automatic, bytes, ranks, crossovers)
                                              : kernel_for(collective, Algorithm::automatic, bytes, crossovers);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::sweep
