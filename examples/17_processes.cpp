// Example 17: example 03's data-parallel training with each rank a process of its own on this
// machine, talking through shared memory: no MPI, no threads shared between ranks.
//
//   chorus-run -n 4 ./17_processes              # chorus's launcher (bench/chorus-run)
//   torchrun --no-python --nproc_per_node 4 ./17_processes
//   mpirun -np 4 ./17_processes                 # Open MPI starts them; chorus does not use MPI here
//
// chorus::shm::from_environment() reads the rank and size the launcher set (RANK/WORLD_SIZE,
// OMPI_COMM_WORLD_*, ...) and meets the other processes through the store it names (chorus-run and
// torchrun set MASTER_ADDR/MASTER_PORT; rank 0 serves it). The training code is the same template as
// examples 03 and 07 (example_mlp::train_data_parallel); rank 0 then trains alone on the whole batch
// and checks that the loss curves agree. Started alone (no launcher), it is one process.
//
// Errors: a chorus::Error on one rank (a timeout, a mismatch, a peer that died) reaches every rank
// through the segment; each reports it and exits non-zero, and chorus-run ends the job.
#include <chorus/host.hpp>
#include <chorus/shm.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "example_mlp.hpp"

int main() {
  try {
    chorus::shm::Comm comm = chorus::shm::from_environment();
    using example_mlp::kGlobalBatch;
    if (kGlobalBatch % static_cast<std::size_t>(comm.size()) != 0) {
      if (comm.rank() == 0) std::fprintf(stderr, "run with a process count that divides %zu\n", kGlobalBatch);
      return 2;
    }
    const std::vector<float> split = example_mlp::train_data_parallel(comm);
    if (comm.rank() != 0) return 0;
    return example_mlp::matches_whole_batch(split, comm.size()) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
