// chorus-run's signals as bytes on a pipe (the self-pipe trick), so the one poll() loop that reads the
// children's output also learns of SIGCHLD, SIGINT and SIGTERM, with no work done inside a handler.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace chorus_run {

inline int g_signal_write_fd = -1;

extern "C" inline void on_signal(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  // Non-blocking: when the pipe is full, a byte is already waiting and the loop will look anyway.
  [[maybe_unused]] const ssize_t n = ::write(g_signal_write_fd, &byte, 1);
  errno = saved;
}

class SignalPipe {
 public:
  static constexpr int kSignals[] = {SIGCHLD, SIGINT, SIGTERM};

  // Installs the handlers. Once only, for the life of the process.
  SignalPipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    read_fd_ = fds[0];
    g_signal_write_fd = fds[1];
    struct sigaction action {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&action.sa_mask);
    for (int signo : kSignals) ::sigaction(signo, &action, nullptr);
    // A closed stdout must end chorus-run's writes with EPIPE, not end chorus-run (and with it the job).
    ::signal(SIGPIPE, SIG_IGN);
  }

  int fd() const { return read_fd_; }

  // The signals that arrived since the last call, in order.
  std::vector<int> drain() const {
    std::vector<int> signals;
    unsigned char buffer[64];
    for (ssize_t n; (n = ::read(read_fd_, buffer, sizeof buffer)) > 0;) signals.insert(signals.end(), buffer, buffer + n);
    return signals;
  }

  // In a forked child before exec: the dispositions chorus-run changed go back to the defaults (exec
  // keeps an ignored SIGPIPE ignored, and a handler must not run between fork and exec).
  static void restore_defaults_in_child() {
    for (int signo : kSignals) ::signal(signo, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
  }

 private:
  int read_fd_ = -1;
};

}  // namespace chorus_run
