// Per-rank random seeds as Megatron-LM derives them (megatron/training/initialize.py
// `_set_random_seed`, megatron/core/tensor_parallel/random.py `model_parallel_cuda_manual_seed`; see
// docs/references.md). A pure function of the base seed and the rank's mesh coordinates:
//
//   seed            = base + 100 pp_rank   (+ 10 dp_rank only with data_parallel_random_init)
//   default_seed    = seed                 Megatron's default CUDA RNG state: the same on every
//                                          rank of a tensor-parallel group, for dropout outside
//                                          tensor-parallel regions (on replicated activations)
//   tensor_parallel_seed = seed + 2718 + tp_rank
//                                          the 'model-parallel-rng' tracker: distinct per TP rank,
//                                          for dropout inside TP regions (on split activations)
//                                          and GPU-side initialisation of weight shards
//   expert_parallel_seed = seed + 1024 + 100 ep_rank + etp_rank   ('expert-parallel-rng')
//
// Data-parallel replicas get identical seeds (unless data_parallel_random_init), so they
// initialise identical weights without a broadcast and draw the same dropout masks; pipeline
// stages differ, so stages holding different layers do not reuse one random stream.
// Arithmetic is on std::uint64_t and wraps modulo 2^64 (torch.manual_seed's range).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "mesh.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

// A rank's coordinates in the parallel dimensions that seeds depend on (0 where absent).
struct ParallelRanks {
  int tp = 0;
  int pp = 0;
  int dp = 0;
  int ep = 0;   // expert parallel
  int etp = 0;  // expert tensor parallel
};

struct RngSeeds {
  std::uint64_t default_seed = 0;
  std::uint64_t tensor_parallel_seed = 0;
  std::uint64_t expert_parallel_seed = 0;
};

inline RngSeeds rng_seeds(std::uint64_t base_seed, const ParallelRanks& ranks, bool data_parallel_random_init = false) {
  for (const auto& [name, value] : {std::pair<const char*, int>{"tp", ranks.tp}, {"pp", ranks.pp}, {"dp", ranks.dp},
                                    {"ep", ranks.ep}, {"etp", ranks.etp}}) {
    if (value < 0) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::parallel::rng_seeds: ", name, " rank = ", value, " is negative"));
    }
  }
  const auto u = [](int v) { return static_cast<std::uint64_t>(v); };
  std::uint64_t seed = base_seed + 100 * u(ranks.pp);
  if (data_parallel_random_init) seed += 10 * u(ranks.dp);
  return {seed, seed + 2718 + u(ranks.tp), seed + 1024 + 100 * u(ranks.ep) + u(ranks.etp)};
}

// The same for world rank `rank` of `mesh`, reading its coordinates along the dimensions named
// "tp", "pp", "dp", "ep" and "etp" (a dimension the mesh lacks counts as coordinate 0).
inline RngSeeds rng_seeds(std::uint64_t base_seed, const Mesh& mesh, int rank, bool data_parallel_random_init = false) {
  const std::vector<int> coords = mesh.coordinates(rank);  // throws for a rank outside the mesh
  ParallelRanks ranks;
  for (std::size_t d = 0; d < mesh.dims().size(); ++d) {
    const std::string& name = mesh.dims()[d].name;
    if (name == "tp") ranks.tp = coords[d];
    if (name == "pp") ranks.pp = coords[d];
    if (name == "dp") ranks.dp = coords[d];
    if (name == "ep") ranks.ep = coords[d];
    if (name == "etp") ranks.etp = coords[d];
  }
  return rng_seeds(base_seed, ranks, data_parallel_random_init);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
