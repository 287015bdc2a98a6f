// How an MPI communicator is named the same on every rank, for the flight-record dumps that
// runtime/own_record.hpp writes when a call fails.
#pragma once

#include "mpi_header.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../runtime/own_record.hpp"
#include "check.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi::detail {

using runtime::CommName;
using runtime::with_own_record;

// Collective over `comm` (blocking, at creation, like the MPI_Comm_dup just before it).
inline CommName name_communicator(MPI_Comm comm, int rank, const char* call) {
  static std::atomic<std::uint32_t> created{0};
  struct Wire {
    std::uint32_t id;
    char text[92];
  } wire{};
  if (rank == 0) {
    wire.id = created.fetch_add(1);
    std::snprintf(wire.text, sizeof wire.text, "%s-comm%u", runtime::process_tag().c_str(), wire.id);
  }
  check_mpi(MPI_Bcast(&wire, sizeof wire, MPI_BYTE, 0, comm), call, rank, "MPI_Bcast");
  wire.text[sizeof wire.text - 1] = '\0';
  return CommName{wire.text, wire.id};
}

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi::detail
