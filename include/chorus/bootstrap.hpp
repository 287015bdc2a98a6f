// Starting a multi-process job: the launcher's rank and local rank (launch_env.hpp), the exchanges that set up
// device communicators over any host communicator (exchange.hpp), and the key-value store processes meet in
// before any communicator exists (store.hpp: served over TCP by rank 0, tcp_store.hpp, or kept in a directory,
// file_store.hpp; store_address.hpp picks one from the environment). Needs no MPI, CUDA or NCCL (POSIX sockets
// and files).
#pragma once

#include "bootstrap/exchange.hpp"
#include "bootstrap/file_store.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/store_address.hpp"
#include "bootstrap/tcp_store.hpp"
