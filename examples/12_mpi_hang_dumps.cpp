// Example 12: the hang of example 10 on the MPI backend, explained from every rank's dump.
//
// One process per rank, so no rank can read another's flight recorder: each rank's error says only
// where that rank was (its last completed and current call). With CHORUS_TRACE_DUMP=dir every rank
// that fails or is released also writes its own record into dir, and chorus-trace-summary merges the
// files into the desync summary (docs/debugging.md, "On the MPI backend"):
//
//   mpirun -np 3 -x CHORUS_TRACE_DUMP=dumps build/examples/12_mpi_hang_dumps
//   build/bench/chorus-trace-summary dumps/*.json
//
// The bug: the last rank skips the broadcast of the learning rate. Exits 0 when every rank got a
// chorus::Error naming its own call 2, as it must.
#include <chorus/mpi.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  const int skipper = comm.size() - 1;
  std::vector<float> gradient(1 << 12, 1.0f);
  float learning_rate = comm.rank() == 0 ? 0.1f : 0.0f;
  std::string error;
  try {
    comm.all_reduce(gradient.data(), gradient.data(), gradient.size(), chorus::ReduceOp::sum);   // call 1
    if (comm.rank() != skipper) comm.broadcast(&learning_rate, &learning_rate, 1, 0);           // call 2: the bug
    comm.all_reduce(gradient.data(), gradient.data(), gradient.size(), chorus::ReduceOp::sum);   // call 3
  } catch (const chorus::Error& e) {
    error = e.what();
  }
  // One rank at a time, so the lines do not interleave (plain MPI: the chorus communicator has failed).
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) {
      std::printf("rank %d caught: %s\n\n", r, error.c_str());
      std::fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const bool explained = error.find("this rank's flight record: rank " + std::to_string(comm.rank())) != std::string::npos &&
                         error.find("now call 2 ") != std::string::npos;
  return explained ? 0 : 1;
}
