// Example 07: the same data-parallel training as example 03, but each rank is an MPI process,
// which may sit on another machine:
//
//   mpirun -np 4 ./07_mpi_data_parallel                                  # one machine
//   mpirun -np 8 --hostfile hosts --map-by ppr:4:node ./07_mpi_data_parallel   # two (docs/multi-node.md)
//
// The training code is example_mlp::train_data_parallel, a template over any chorus communicator:
// example 03 hands it a host::Comm (threads), this program a chorus::mpi::Comm (processes). Rank 0
// then trains the same model alone on the whole batch, on one host thread, and checks that the
// two loss curves agree: data parallelism across processes is still the big batch, split.
//
// Errors: a chorus::Error on one rank (a timeout, ranks that disagree) reaches every rank; a rank
// reports it and ends the whole job with MPI_Abort, since MPI_Finalize would wait for processes
// that may never arrive.
#include <chorus/host.hpp>
#include <chorus/mpi.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "example_mlp.hpp"

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  using example_mlp::kGlobalBatch;
  if (kGlobalBatch % static_cast<std::size_t>(comm.size()) != 0) {
    if (comm.rank() == 0) std::fprintf(stderr, "run with a process count that divides %zu\n", kGlobalBatch);
    return 2;
  }
  try {
    const std::vector<float> split = example_mlp::train_data_parallel(comm);
    if (comm.rank() != 0) return 0;
    if (!example_mlp::matches_whole_batch(split, comm.size())) MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 0;
}
