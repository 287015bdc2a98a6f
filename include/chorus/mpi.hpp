// The MPI backend (opt-in): chorus::mpi::Comm (chorus's schedules over MPI point-to-point),
// chorus::mpi::NativeComm (MPI's own collectives behind the same interface) and chorus::mpi::Session.
// Needs MPI's headers and library: compile with mpicxx, or add `pkg-config --cflags --libs ompi-cxx`
// (Meson: dependency('mpi', language: 'cpp')). Launcher conventions and handle exchange, which need
// no MPI, are in <chorus/bootstrap.hpp>.
#pragma once

#include "mpi/comm.hpp"
#include "mpi/native_comm.hpp"
#include "mpi/session.hpp"
