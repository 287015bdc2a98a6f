// The shared-memory communicator of a job on one machine, from its launcher's environment, so one
// binary runs under chorus-run, torchrun --no-python, mpirun and srun:
//
//   chorus::shm::Comm comm = chorus::shm::from_environment();
//
// Rank and size come from bootstrap::launch_info(). The store is the one the environment names
// (CHORUS_STORE, or MASTER_ADDR/MASTER_PORT as chorus-run sets them: bootstrap/store_address.hpp). Where
// none is named but the launcher gives the job an id (torchrun's TORCHELASTIC_RUN_ID with MASTER_PORT,
// Open MPI's PMIX_NAMESPACE, Slurm's SLURM_JOB_ID.SLURM_STEP_ID, MPICH's PMI_KVSNAME), the ranks meet in
// a FileStore in a directory named after that id under the temporary directory, which rank 0 removes as
// soon as the communicator is built. torchrun's MASTER_PORT is taken by its agent's own store (another
// protocol), so under torchrun the job id wins over MASTER_ADDR/MASTER_PORT. A single process needs no
// store at all.
#pragma once

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "../bootstrap/file_store.hpp"
#include "../bootstrap/launch_env.hpp"
#include "../bootstrap/store_address.hpp"
#include "../core/config.hpp"
#include "comm.hpp"
#include "options.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm {
namespace detail {

inline bool variable_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

// torchrun's elastic agent serves torch's own TCPStore at MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True):
// another protocol, on a port chorus's rank 0 cannot take.
inline bool torchrun_agent_store() {
  const char* value = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  return value != nullptr && (std::string(value) == "True" || std::string(value) == "true" || std::string(value) == "1");
}

// The launcher's id for this job, "" when it gives none.
inline std::string job_id() {
  if (variable_set("TORCHELASTIC_RUN_ID")) {  // "none" unless --rdzv-id or --standalone: the port tells jobs apart
    return std::string("torchrun-") + std::getenv("TORCHELASTIC_RUN_ID") + "-" +
           (variable_set("MASTER_PORT") ? std::getenv("MASTER_PORT") : "0");
  }
  for (const char* name : {"PMIX_NAMESPACE", "PMI_KVSNAME"}) {
    if (variable_set(name)) return std::getenv(name);
  }
  if (variable_set("SLURM_JOB_ID")) {
    return std::string(std::getenv("SLURM_JOB_ID")) + "." +
           (variable_set("SLURM_STEP_ID") ? std::getenv("SLURM_STEP_ID") : "0");
  }
  return "";
}

inline std::string safe_file_name(const std::string& text) {
  std::string name;
  for (char c : text) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return name;
}

}  // namespace detail

inline Comm from_environment(const Options& options = {}) {
  const bootstrap::LaunchInfo info = bootstrap::launch_info();
  const std::chrono::milliseconds timeout(detail::timeout_of(options));
  const std::string job = detail::job_id();
  const bool master = (detail::variable_set("MASTER_ADDR") || detail::variable_set("MASTER_PORT")) &&
                      !(detail::torchrun_agent_store() && !job.empty());
  const bool named = detail::variable_set("CHORUS_STORE") || master;
  if (named || (job.empty() && info.size > 1)) {
    std::unique_ptr<bootstrap::Store> store = bootstrap::store_from_environment(info, timeout);
    return Comm(*store, info.rank, info.size, options);
  }
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() /
      ("chorus-job-" + detail::safe_file_name(job.empty() ? "single-" + std::to_string(::getpid()) : job));
  Comm comm;
  {
    bootstrap::FileStore store(directory.string(), timeout);
    comm = Comm(store, info.rank, info.size, options);
  }
  // Every rank has read the store once the constructor returns on rank 0 (it waits for all to map).
  if (info.rank == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
  }
  return comm;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::shm
