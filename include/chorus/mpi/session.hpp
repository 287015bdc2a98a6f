// chorus::mpi::Session: MPI_Init_thread and MPI_Finalize for programs that want MPI's lifetime
// managed; a communicator (mpi::Comm, mpi::NativeComm) never initialises or finalises MPI itself.
//
//   int main(int argc, char** argv) {
//     chorus::mpi::Session session(argc, argv);
//     chorus::mpi::Comm comm(MPI_COMM_WORLD);
//     ...
//   }
//
// It asks for MPI_THREAD_MULTIPLE (a gradient reducer's communication thread calls MPI while the
// caller computes) and reports what MPI provided. If MPI is already initialised it leaves MPI alone,
// then and at the end. Leaving the session's scope by an exception aborts the job (MPI_Abort):
// MPI_Finalize waits for every process, and after a failure some of them may never arrive.
#pragma once

#include "mpi_header.hpp"

#include <cstdio>
#include <exception>

#include "../core/config.hpp"
#include "check.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi {

class Session {
 public:
  Session() : Session(nullptr, nullptr) {}
  Session(int& argc, char**& argv) : Session(&argc, &argv) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ~Session() {
    if (!owns_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (std::uncaught_exceptions() > exceptions_at_start_) {
      std::fputs("chorus::mpi::Session: left by an exception; aborting the MPI job\n", stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
  }

  // MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE.
  int thread_level() const { return provided_; }
  // Whether this session initialised MPI (and so finalises it).
  bool owns_mpi() const { return owns_; }

 private:
  Session(int* argc, char*** argv) : exceptions_at_start_(std::uncaught_exceptions()) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Query_thread(&provided_);
      return;
    }
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_), "mpi::Session", -1, "MPI_Init_thread");
    owns_ = true;
  }

  int exceptions_at_start_ = 0;
  int provided_ = MPI_THREAD_SINGLE;
  bool owns_ = false;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi
