// Turns an MPI return code into chorus::Error. chorus's communicators set MPI_ERRORS_RETURN on the
// communicators they create, so MPI reports failures as codes instead of aborting the job, and the
// error names the chorus call, the rank and the MPI function with MPI's own message.
#pragma once

#include "mpi_header.hpp"

#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi {

inline std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

// A truncated message means ranks disagree on a size (mismatch); any other MPI error is internal.
inline void check_mpi(int code, const char* call, RankName rank, const char* function) {
  if (code == MPI_SUCCESS) return;
  int error_class = code;
  MPI_Error_class(code, &error_class);
  const ErrorCode kind = error_class == MPI_ERR_TRUNCATE ? ErrorCode::mismatch : ErrorCode::internal;
  throw make_error(kind, call, rank, function, " failed: ", mpi_message(code));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi
