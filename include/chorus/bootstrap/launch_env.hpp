// What the launcher told this process: its rank and the job's size, and its place on this node,
// read from the environment each launcher sets. Used to pick this process's GPU before any
// communicator exists (NCCL and CUDA IPC need the device chosen first).
//
//   launcher   rank / size                             local rank / local size
//   Open MPI   OMPI_COMM_WORLD_RANK / _SIZE            OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE
//   torchrun   RANK / WORLD_SIZE                       LOCAL_RANK / LOCAL_WORLD_SIZE
//   MPICH      PMI_RANK / PMI_SIZE                     MPI_LOCALRANKID / MPI_LOCALNRANKS
//   Slurm      SLURM_PROCID / SLURM_NTASKS             SLURM_LOCALID / (not given: local_size 0)
// The first launcher whose rank variable is set wins, in that order; none: a single process.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace bootstrap {

struct LaunchInfo {
  std::string launcher = "none";  // "openmpi", "torchrun", "mpich", "slurm" or "none"
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 0;  // 0: the launcher does not say
};

namespace detail {

// The variable's value as an int >= minimum, or `fallback` when unset; malformed is an error.
inline int read_int(const char* name, int fallback, int minimum) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < minimum || value > 1L << 30) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::bootstrap::launch_info: ", name, "='", text,
                                       "' is not an integer >= ", minimum));
  }
  return static_cast<int>(value);
}

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // may be null
};

inline constexpr LauncherVariables kLaunchers[] = {
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

}  // namespace detail

inline LaunchInfo launch_info() {
  for (const detail::LauncherVariables& v : detail::kLaunchers) {
    const char* rank = std::getenv(v.rank);
    if (rank == nullptr || *rank == '\0') continue;
    LaunchInfo info;
    info.launcher = v.launcher;
    info.rank = detail::read_int(v.rank, 0, 0);
    info.size = detail::read_int(v.size, 1, 1);
    info.local_rank = detail::read_int(v.local_rank, 0, 0);
    info.local_size = v.local_size != nullptr ? detail::read_int(v.local_size, 0, 1) : 0;
    if (info.rank >= info.size) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::bootstrap::launch_info: ", v.rank, "=", info.rank,
                                         " is not below ", v.size, "=", info.size));
    }
    if (info.local_size > 0 && info.local_rank >= info.local_size) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::bootstrap::launch_info: ", v.local_rank, "=", info.local_rank,
                                         " is not below ", v.local_size, "=", info.local_size));
    }
    return info;
  }
  return LaunchInfo{};
}

// The device this process should use: one process per GPU, in local-rank order. More processes on
// the node than devices is an error (NCCL refuses two ranks on one GPU), not a silent doubling up.
inline int local_device(int device_count, const LaunchInfo& info = launch_info()) {
  if (device_count <= 0) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::bootstrap::local_device on rank ", info.rank, ": ", device_count,
                                       " devices visible"));
  }
  if (info.local_rank >= device_count || info.local_size > device_count) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat("chorus::bootstrap::local_device on rank ", info.rank, ": local rank ",
                                       info.local_rank, " of ", info.local_size > 0 ? info.local_size : info.local_rank + 1,
                                       " processes on this node, but only ", device_count,
                                       " devices visible (one process per GPU; check --map-by / --nproc-per-node "
                                       "and CUDA_VISIBLE_DEVICES)"));
  }
  return info.local_rank;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bootstrap
