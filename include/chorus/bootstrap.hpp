// Starting a multi-process job: the launcher's rank and local rank (launch_env.hpp) and the exchanges
// that set up device communicators over any host communicator (exchange.hpp). Needs no MPI, CUDA or NCCL.
#pragma once

#include "bootstrap/exchange.hpp"
#include "bootstrap/launch_env.hpp"
