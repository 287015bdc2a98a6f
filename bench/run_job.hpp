// chorus-run's job: N ranks of one command, started and watched by a single poll() loop
// (docs/chorus-run.md). The loop reads the ranks' output when labelled, learns of exits and of SIGINT and
// SIGTERM through the signal pipe, and keeps the deadlines.
//
// A job ends by itself when every rank has exited. After the first failure the other ranks get the grace
// period to end on their own (a chorus communicator releases them with an error naming the failed rank,
// usually well within a second, and that report is worth having); then every rank's process group gets
// SIGTERM. SIGINT/SIGTERM sent to chorus-run, or a rank that cannot be started, end the job at once (the
// signal passed on as it came, or SIGTERM). An ended job waits the grace period for everything its ranks
// started to exit, then SIGKILLs what is left.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run_line_labels.hpp"
#include "run_signal_pipe.hpp"
#include "run_spawn.hpp"

namespace chorus_run {

using Clock = std::chrono::steady_clock;

// A wait status as a shell reports it: the exit code, or 128 + the signal that ended the process.
inline int shell_status(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

inline std::string describe(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  const int signo = WTERMSIG(wait_status);
  return "was killed by signal " + std::to_string(signo) + " (" + strsignal(signo) + ")";
}

class Job {
 public:
  Job(std::vector<std::string> command, bool label, Clock::duration grace)
      : command_(std::move(command)), label_(label), grace_(grace) {
    // What a rank started and left behind becomes chorus-run's child, and is reaped here as it dies: a
    // process group is then empty as soon as its members are dead, whatever pid 1 does with orphans.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }

  // Starts one more rank. Throws LaunchError when it cannot; the ranks already started are left to
  // end() and wait().
  void start(int rank, const RankEnvironment& environment) {
    const Spawned spawned = spawn_rank(command_, rank, environment, label_);
    Rank r;
    r.rank = rank;
    r.pid = spawned.pid;
    r.out_fd = spawned.out_fd;
    r.err_fd = spawned.err_fd;
    if (label_) {
      const std::string prefix = "[" + std::to_string(rank) + "] ";
      r.out = std::make_unique<LineLabeler>(prefix, STDOUT_FILENO);
      r.err = std::make_unique<LineLabeler>(prefix, STDERR_FILENO);
    }
    ranks_.push_back(std::move(r));
    if (spawned.exec_errno != 0) {
      throw LaunchError(spawned.exec_errno == ENOENT ? 127 : 126,
                        "cannot run '" + command_[0] + "': " + std::strerror(spawned.exec_errno));
    }
  }

  // Ends the job with `status` (a rank could not be started).
  void end(int status) {
    if (!first_failure_) first_failure_ = status;
    signal_groups(SIGTERM);
  }

  // Runs until the job is over and its output written; returns chorus-run's exit status: the first
  // failure's, or 0.
  int wait() {
    for (;;) {
      reap();
      const Clock::time_point now = Clock::now();
      if (term_deadline_ && now >= *term_deadline_) {
        term_deadline_.reset();
        const std::string left = ranks_with_live_groups();
        if (!left.empty()) {
          say("processes of " + left + " still running " + seconds(grace_) + " after the failure; sending SIGTERM");
          signal_groups(SIGTERM);
        }
      }
      if (kill_deadline_ && now >= *kill_deadline_) {
        const std::string left = ranks_with_live_groups();
        if (!left.empty()) say("processes of " + left + " still running after " + seconds(grace_) + "; sending SIGKILL");
        signal_groups(SIGKILL);
        kill_deadline_.reset();
      }
      const bool running = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
      const bool busy = running || ((kill_deadline_ || term_deadline_) && !ranks_with_live_groups().empty());
      if (!busy) kill_deadline_.reset();
      if (!busy && !output_deadline_) output_deadline_ = now + grace_;
      std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
      for (const Rank& r : ranks_) {
        for (int fd : {r.out_fd, r.err_fd}) {
          if (fd >= 0) fds.push_back({fd, POLLIN, 0});
        }
      }
      // Output held open by something that outlived its rank is not waited for past the grace period.
      if (!busy && (fds.size() == 1 || now >= *output_deadline_)) break;
      ::poll(fds.data(), fds.size(), poll_timeout_ms(running));
      for (int signo : signals_.drain()) {
        if (signo == SIGINT || signo == SIGTERM) {
          say(std::string("got ") + (signo == SIGINT ? "SIGINT" : "SIGTERM") + "; passing it to every rank");
          signal_groups(signo);
        }
      }
      for (Rank& r : ranks_) {
        read_output(r.out_fd, r.out.get());
        read_output(r.err_fd, r.err.get());
      }
    }
    for (Rank& r : ranks_) {
      for (auto [fd, labeler] : {std::pair{&r.out_fd, r.out.get()}, std::pair{&r.err_fd, r.err.get()}}) {
        if (*fd >= 0) labeler->finish();
        detail::close_fd(*fd);
        *fd = -1;
      }
    }
    return first_failure_.value_or(0);
  }

 private:
  struct Rank {
    int rank = 0;
    pid_t pid = 0;  // and its process group
    bool running = true;
    int out_fd = -1, err_fd = -1;
    std::unique_ptr<LineLabeler> out, err;
  };

  // Reaps every child that has exited: ranks, and orphans the ranks left (chorus-run is their subreaper).
  void reap() {
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      const auto r = std::find_if(ranks_.begin(), ranks_.end(), [pid](const Rank& x) { return x.pid == pid; });
      if (r == ranks_.end()) continue;
      r->running = false;
      if (shell_status(status) == 0 || first_failure_) continue;
      first_failure_ = shell_status(status);
      say("rank " + std::to_string(r->rank) + " " + describe(status) +
          (ended_ ? "" : "; the other ranks have " + seconds(grace_) + " to end before SIGTERM"));
      if (!ended_) term_deadline_ = Clock::now() + grace_;
    }
  }

  // Signals every rank's process group, the groups of ranks that have exited too (what they left), and
  // starts the grace period once. A group's number is not reused while the group has members (Linux
  // keeps the pid in use), so an exited rank's number names its leftovers or nothing.
  void signal_groups(int signo) {
    for (const Rank& r : ranks_) ::kill(-r.pid, signo);
    ended_ = true;
    if (signo != SIGKILL && !kill_deadline_) kill_deadline_ = Clock::now() + grace_;
  }

  // "rank 2" or "ranks 0, 3": the ranks whose process group still has a member; "" when none.
  std::string ranks_with_live_groups() const {
    std::string list;
    int count = 0;
    for (const Rank& r : ranks_) {
      if (::kill(-r.pid, 0) == 0 || errno == EPERM) list += (count++ ? ", " : "") + std::to_string(r.rank);
    }
    return count == 0 ? "" : (count == 1 ? "rank " : "ranks ") + list;
  }

  int poll_timeout_ms(bool running) const {
    std::optional<Clock::time_point> deadline = kill_deadline_ ? kill_deadline_ : output_deadline_;
    if (term_deadline_ && (!deadline || *term_deadline_ < *deadline)) deadline = term_deadline_;
    if (!deadline) return -1;
    long long left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
    // The ranks are gone but not all they started: its end may not be a child's end, so look again soon.
    if (!running && (kill_deadline_ || term_deadline_)) left = std::min(left, 50LL);
    return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
  }

  static void read_output(int& fd, LineLabeler* labeler) {
    if (fd < 0) return;
    char buffer[1 << 16];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) return labeler->feed(buffer, static_cast<std::size_t>(n));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    labeler->finish();
    detail::close_fd(fd);
    fd = -1;
  }

  static std::string seconds(Clock::duration d) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", std::chrono::duration<double>(d).count());
    return text;
  }

  static void say(const std::string& message) { write_all(STDERR_FILENO, "chorus-run: " + message + "\n"); }

  std::vector<std::string> command_;
  bool label_;
  Clock::duration grace_;
  SignalPipe signals_;
  std::vector<Rank> ranks_;
  std::optional<int> first_failure_;
  bool ended_ = false;  // by a failure or a signal: the ranks' groups have been signalled
  std::optional<Clock::time_point> term_deadline_;  // after the first failure: when the others get SIGTERM
  std::optional<Clock::time_point> kill_deadline_, output_deadline_;
};

}  // namespace chorus_run
