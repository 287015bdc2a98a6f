// One rank of an MPI job dies mid-collective (SIGKILL: no destructor, no MPI_Abort). The job must
// end with an error, not hang: run by kill_test.sh, which bounds mpirun's time and checks its status.
#include <chorus/mpi.hpp>

#include <csignal>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  chorus::mpi::Comm comm(MPI_COMM_WORLD);
  std::vector<float> data(1 << 20, 1.0f);
  try {
    for (int i = 0; i < 1000; ++i) {
      if (i == 3 && comm.rank() == 1) std::raise(SIGKILL);
      comm.all_reduce(data.data(), data.data(), data.size(), chorus::ReduceOp::avg);
    }
  } catch (const chorus::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  std::printf("rank %d finished every call: the killed rank was not noticed\n", comm.rank());
  return 0;
}
