// Processes on one machine without MPI: chorus::shm::Comm, one POSIX shared-memory segment per
// communicator (shm/comm.hpp), set up through a bootstrap::Store. Opt-in like <chorus/mpi.hpp>: not
// part of <chorus/chorus.hpp>. Linux. docs/shm.md.
#pragma once

#include "shm/comm.hpp"
#include "shm/from_environment.hpp"
