// A job for tests/shm/check_kill_job.py, started by chorus-run: 64 MiB all_reduces in a loop, with a
// rank killed by SIGKILL. `kill_job one` kills rank 2 at the fourth call; `kill_job all` kills every
// rank as soon as the communicator is set up. Each rank prints its pid first (so the check can look
// for its segments in /dev/shm), and a survivor prints the error that released it and how long after
// its last finished call it came.
#include <signal.h>
#include <unistd.h>

#include <chorus/shm.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  const bool all = argc > 1 && std::strcmp(argv[1], "all") == 0;
  std::printf("pid %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  chorus::shm::Options options;
  options.timeout_ms = 60000;
  chorus::shm::Comm comm = chorus::shm::from_environment(options);
  if (all) ::raise(SIGKILL);
  std::vector<float> data(16u << 20, 1.0f);
  auto last = std::chrono::steady_clock::now();
  try {
    for (int i = 0;; ++i) {
      if (comm.rank() == 2 && i == 3) ::raise(SIGKILL);
      comm.all_reduce(data.data(), data.data(), data.size(), chorus::ReduceOp::sum);
      last = std::chrono::steady_clock::now();
    }
  } catch (const chorus::Error& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - last);
    std::printf("released after %lld ms: %s: %s\n", static_cast<long long>(ms.count()), chorus::to_string(e.code()),
                e.what());
    return 1;
  }
}
