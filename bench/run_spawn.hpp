// chorus-run: starting one rank. The rank runs `command` in a process group of its own (so a signal
// reaches everything it starts) with its environment, stdin and, when labelled, stdout and stderr set.
// Whether exec worked is known before spawn_rank() returns: a failed exec reports its errno through a
// close-on-exec pipe, so a missing program is said once, by chorus-run, and not by N children.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "run_signal_pipe.hpp"

namespace chorus_run {

// What a rank's environment gains (set) and loses (unset) over chorus-run's own.
struct RankEnvironment {
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> unset;
};

// A rank could not be started. `status` is chorus-run's exit status for it, as a shell's: 127 for no
// such program, 126 for one that cannot be executed, 1 when chorus-run itself ran out of something.
struct LaunchError : std::runtime_error {
  LaunchError(int status, const std::string& what) : std::runtime_error(what), status(status) {}
  int status;
};

struct Spawned {
  pid_t pid = -1;  // also its process group
  int out_fd = -1, err_fd = -1;  // the read ends of its stdout and stderr, when labelled
  int exec_errno = 0;  // non-zero: exec failed (the child has exited with 127 or 126)
};

namespace detail {

inline void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

[[noreturn]] inline void exec_rank(const std::vector<std::string>& command, int rank, const RankEnvironment& environment,
                                   int out, int err, int report, const sigset_t& mask, pid_t parent) {
  ::setpgid(0, 0);
  SignalPipe::restore_defaults_in_child();
  // A chorus-run killed outright (SIGKILL, no chance to end the job) still ends its ranks: each gets SIGTERM.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  if (::getppid() != parent) ::raise(SIGTERM);  // it died before prctl
  if (out >= 0) ::dup2(out, STDOUT_FILENO);
  if (err >= 0) ::dup2(err, STDERR_FILENO);
  // As mpirun does, only rank 0 reads chorus-run's stdin; a terminal is read by no rank, since a rank
  // outside the terminal's foreground process group would be stopped by SIGTTIN when it reads.
  if (rank != 0 || ::isatty(STDIN_FILENO)) {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
  }
  for (const std::string& name : environment.unset) ::unsetenv(name.c_str());
  for (const auto& [name, value] : environment.set) ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int exec_errno = errno;
  [[maybe_unused]] const ssize_t n = ::write(report, &exec_errno, sizeof exec_errno);
  ::_exit(exec_errno == ENOENT ? 127 : 126);
}

}  // namespace detail

inline Spawned spawn_rank(const std::vector<std::string>& command, int rank, const RankEnvironment& environment,
                          bool label) {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  if ((label && (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)) || ::pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int fd : {out[0], out[1], err[0], err[1], report[0], report[1]}) detail::close_fd(fd);
    throw LaunchError(1, "cannot start rank " + std::to_string(rank) + ": pipe: " + std::strerror(error));
  }
  // No handler may run in the child between fork and exec: signals wait until the child has reset them.
  sigset_t all, before;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) detail::exec_rank(command, rank, environment, out[1], err[1], report[1], before, parent);
  const int fork_errno = errno;
  if (pid > 0) ::setpgid(pid, pid);  // here too, so the group exists before anyone signals it
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  for (int fd : {out[1], err[1], report[1]}) detail::close_fd(fd);
  if (pid < 0) {
    for (int fd : {out[0], err[0], report[0]}) detail::close_fd(fd);
    throw LaunchError(1, "cannot start rank " + std::to_string(rank) + ": fork: " + std::strerror(fork_errno));
  }
  Spawned spawned;
  spawned.pid = pid;
  spawned.out_fd = out[0];
  spawned.err_fd = err[0];
  // The report pipe closes when exec succeeds; before that, a failed exec writes its errno into it.
  ssize_t n;
  while ((n = ::read(report[0], &spawned.exec_errno, sizeof spawned.exec_errno)) < 0 && errno == EINTR) {
  }
  if (n <= 0) spawned.exec_errno = 0;
  detail::close_fd(report[0]);
  // chorus-run's loop reads every pipe each time round; only its poll() may wait.
  for (int fd : {spawned.out_fd, spawned.err_fd}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  return spawned;
}

}  // namespace chorus_run
