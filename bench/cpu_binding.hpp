// Binding a thread to one CPU, shared by chorus-p2p (a thread per CPU of a pair) and chorus-bench (a rank
// per core, as mpirun --bind-to core places MPI's processes; docs/benchmarks.md, "How a sample is timed").
#pragma once

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <string>
#include <vector>

#include <chorus/core/error.hpp>

namespace cpu_binding {

// The CPUs this process may run on (its affinity mask, e.g. as taskset or a container set it).
inline std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    throw chorus::Error(chorus::ErrorCode::internal, "sched_getaffinity failed");
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

inline void pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int status = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (status != 0) {
    throw chorus::Error(chorus::ErrorCode::invalid_argument,
                        chorus::detail::concat("cannot pin a thread to CPU ", cpu, ": ", std::strerror(status)));
  }
}

}  // namespace cpu_binding

namespace cpu_binding {

// chorus-bench's --bind core: rank r of a job on the (r mod n)-th of the n CPUs this process may use, as
// mpirun --bind-to core places MPI's processes (with :overload-allowed when there are more ranks than cores,
// as bench/chorus-compare runs it), so the scheduler cannot put two spinning ranks on one core while another
// sits idle, and threads and processes are placed alike. --bind none: -1, nothing bound.
inline int cpu_for_rank(bool bind, int rank) {
  if (!bind) return -1;
  const std::vector<int> cpus = allowed_cpus();
  return cpus[static_cast<std::size_t>(rank) % cpus.size()];
}

// " on CPU 3" or " unbound", for the preamble's device lines.
inline std::string describe(int cpu) { return cpu >= 0 ? " bound to CPU " + std::to_string(cpu) : " unbound"; }

}  // namespace cpu_binding
