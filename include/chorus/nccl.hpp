// The NCCL backend (opt-in): chorus::nccl::Comm (RAII over ncclComm_t; comm.on(stream) is a communicator
// with chorus's contract) and chorus::nccl::Group (ncclGroupStart/End). Needs the CUDA runtime and NCCL:
// -I<cuda>/include -isystem <cuda>/include/cccl (CUDA 13), -lnccl -lcudart, or the Meson dependency
// chorus_nccl_dep. A plain compiler without them stops with an #error saying so. docs/nccl.md.
#pragma once

#include "nccl/comm.hpp"
#include "nccl/group.hpp"
