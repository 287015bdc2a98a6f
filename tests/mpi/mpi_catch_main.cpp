// Catch2's runner for the mpi suite: one process per rank under mpirun, MPI initialised around the
// whole run. Every process runs every test case in the same order, so the collectives line up.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <chorus/mpi/session.hpp>

int main(int argc, char** argv) {
  chorus::mpi::Session session(argc, argv);
  return Catch::Session().run(argc, argv);
}
