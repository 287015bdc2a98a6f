// <mpi.h> for chorus's MPI headers: a clear error where it is missing, and without the C++ bindings
// (removed in MPI-3; Open MPI's still warn under -Wextra).
#pragma once

#if defined(__has_include)
#if !__has_include(<mpi.h>)
#error "chorus's MPI backend needs MPI's <mpi.h>: compile with mpicxx, or add MPI's include path (pkg-config --cflags ompi-cxx; Meson: dependency('mpi', language: 'cpp')). Debian: apt-get install libopenmpi-dev"
#endif
#endif

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
