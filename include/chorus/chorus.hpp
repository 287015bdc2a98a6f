// Umbrella for everything that needs no GPU toolchain, no NCCL and no MPI.
#pragma once

#include "core.hpp"
#include "algo.hpp"
#include "runtime.hpp"
#include "host.hpp"
#include "topo.hpp"
#include "model.hpp"
#include "bench.hpp"
#include "bootstrap.hpp"
#include "parallel.hpp"
