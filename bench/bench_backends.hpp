// Where chorus-bench's ranks live. A backend runs the benchmark body once per rank, merges the
// per-rank figures so every process holds all of them, and says which process prints.
//   host        ranks are threads of this process (host::Team)
//   mpi         one rank per MPI process: chorus's schedules over MPI point-to-point (mpi::Comm)
//   mpi-native  one rank per MPI process: MPI's own collectives (mpi::NativeComm)
//   shm         one rank per process on this machine, over shared memory (shm::Comm), started by
//               chorus-run, torchrun --no-python, mpirun or srun
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include <chorus/core/error.hpp>
#include <chorus/host.hpp>
#include <chorus/shm.hpp>

#include "cpu_binding.hpp"
#if defined(CHORUS_BENCH_MPI)
#include <chorus/mpi.hpp>
#endif

namespace bench_backends {

// One figure per rank; a backend fills its own ranks' entries, then merge() completes them.
struct RankTimes {
  std::vector<double> seconds;
  std::vector<std::uint64_t> wrong;
  explicit RankTimes(int ranks) : seconds(ranks, 0.0), wrong(ranks, 0) {}
};

inline std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// bind: rank r's thread on CPU r mod n (cpu_binding::cpu_for_rank), bound again on every run's new threads.
class HostBackend {
 public:
  HostBackend(int ranks, bool bind) : team_(ranks) {
    for (int r = 0; r < ranks; ++r) cpus_.push_back(cpu_binding::cpu_for_rank(bind, r));
  }
  static constexpr const char* kName = "host";
  int ranks() const { return team_.size(); }
  bool prints() const { return true; }
  std::string description() const { return "the host backend (ranks are threads of one process)"; }
  template <class Fn>
  void run(Fn&& fn) {
    team_.run([&](auto& comm) {
      const int cpu = cpus_[static_cast<std::size_t>(comm.rank())];
      if (cpu >= 0) cpu_binding::pin_current_thread(cpu);
      fn(comm);
    });
  }
  void merge(RankTimes&) const {}  // the threads wrote every entry
  chorus::host::Team& team() { return team_; }
  std::vector<std::string> devices() const {
    std::vector<std::string> lines;
    const std::string host = host_name();
    for (int r = 0; r < ranks(); ++r) {
      lines.push_back(chorus::detail::concat("Rank ", r, " Pid ", getpid(), " on ", host, " host thread ", r,
                                         cpu_binding::describe(cpus_[static_cast<std::size_t>(r)])));
    }
    return lines;
  }

 private:
  chorus::host::Team team_;
  std::vector<int> cpus_;  // per rank; -1: unbound
};

// bind: rank r's process on CPU r mod n of the CPUs it may use (every rank of an shm job is on this machine;
// under mpirun --bind-to core that is the one CPU mpirun gave it).
class ShmBackend {
 public:
  explicit ShmBackend(bool bind) : comm_(chorus::shm::from_environment()) {
    cpu_ = cpu_binding::cpu_for_rank(bind, comm_.rank());
    if (cpu_ >= 0) cpu_binding::pin_current_thread(cpu_);
  }
  int ranks() const { return comm_.size(); }
  bool prints() const { return comm_.rank() == 0; }
  std::string description() const {
    return chorus::detail::concat("the shared-memory backend: chorus's schedules over one ", comm_.segment_bytes() >> 20,
                                  " MiB segment (one process per rank)");
  }
  template <class Fn>
  void run(Fn&& fn) {
    fn(comm_);
  }
  // Each process filled its own entry; every other entry is zero.
  void merge(RankTimes& times) {
    comm_.all_reduce(times.seconds.data(), times.seconds.data(), times.seconds.size(), chorus::ReduceOp::max);
    comm_.all_reduce(times.wrong.data(), times.wrong.data(), times.wrong.size(), chorus::ReduceOp::sum);
  }
  std::vector<std::string> devices() {
    const std::int32_t mine[2] = {static_cast<std::int32_t>(getpid()), cpu_};
    std::vector<std::int32_t> pids(2 * static_cast<std::size_t>(ranks()));
    comm_.all_gather(mine, pids.data(), 2);
    std::vector<std::string> lines;
    const std::string host = host_name();
    for (int r = 0; r < ranks(); ++r) {
      const auto at = 2 * static_cast<std::size_t>(r);
      lines.push_back(chorus::detail::concat("Rank ", r, " Pid ", pids[at], " on ", host, " shm process ", r,
                                             cpu_binding::describe(pids[at + 1])));
    }
    return lines;
  }

 private:
  chorus::shm::Comm comm_;
  std::int32_t cpu_ = -1;
};

#if defined(CHORUS_BENCH_MPI)
// Comm: chorus::mpi::Comm or chorus::mpi::NativeComm over MPI_COMM_WORLD.
template <class Comm>
class MpiBackend {
 public:
  MpiBackend(const char* name, const char* description) : comm_(MPI_COMM_WORLD), name_(name), description_(description) {}
  int ranks() const { return comm_.size(); }
  bool prints() const { return comm_.rank() == 0; }
  std::string description() const { return description_; }
  template <class Fn>
  void run(Fn&& fn) {
    fn(comm_);
  }
  // Each process filled its own entry; every other entry is zero.
  void merge(RankTimes& times) const {
    MPI_Allreduce(MPI_IN_PLACE, times.seconds.data(), ranks(), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, times.wrong.data(), ranks(), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  }
  std::vector<std::string> devices() const {
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(host, &length);
    std::vector<char> hosts(static_cast<std::size_t>(ranks()) * MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    const int pid = static_cast<int>(getpid());
    std::vector<int> pids(static_cast<std::size_t>(ranks()));
    MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<std::string> lines;
    for (int r = 0; r < ranks(); ++r) {
      lines.push_back(chorus::detail::concat("Rank ", r, " Pid ", pids[static_cast<std::size_t>(r)], " on ",
                                             &hosts[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME],
                                             " MPI process ", r));
    }
    return lines;
  }
  const char* name() const { return name_; }

 private:
  Comm comm_;
  const char* name_;
  const char* description_;
};
#endif

}  // namespace bench_backends
