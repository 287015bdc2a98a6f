// Runs a check in forked processes, one rank each, the way chorus-run or torchrun would start them,
// with a FileStore in a fresh directory for bootstrap. Each child reports the failures it saw as text
// through a pipe and exits; the parent (the test's main thread, the only one that asserts) collects
// every child's report and exit status, killing all of them if the run outlives its limit, so a hang
// fails the test instead of blocking CI.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chorus/bootstrap/file_store.hpp>
#include <chorus/core/error.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace shm_harness {

struct ChildResult {
  int exit_code = -1;  // the child's exit status; 128 + signal when killed
  std::string report;  // the failures it wrote, one per line
  int pid = 0;
};

// A fresh directory for the run's FileStore, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "chorus-shm-test-XXXXXX").string();
    if (::mkdtemp(&pattern[0]) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// fn(store, rank, size) -> std::vector<std::string> failures; runs in `ranks` children whose FileStore
// lives in `dir`.
template <class Fn>
std::vector<ChildResult> run_processes_in(const std::string& dir, int ranks, Fn fn,
                                          std::chrono::seconds limit = std::chrono::seconds(120),
                                          std::chrono::milliseconds store_timeout = std::chrono::milliseconds(20000)) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int rank = 0; rank < ranks; ++rank) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string report;
      int code = 0;
      try {
        chorus::bootstrap::FileStore store(dir, store_timeout);
        report = join(fn(store, rank, ranks));
      } catch (const std::exception& e) {
        report = std::string("uncaught exception: ") + e.what() + "\n";
        code = 3;
      }
      std::size_t written = 0;
      while (written < report.size()) {
        const ssize_t n = ::write(fds[1], report.data() + written, report.size() - written);
        if (n <= 0) break;
        written += static_cast<std::size_t>(n);
      }
      ::close(fds[1]);
      std::_Exit(code);  // no atexit handlers, no Catch2 teardown in the child
    }
    ::close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<ChildResult> results(static_cast<std::size_t>(ranks));
  for (std::size_t i = 0; i < pids.size(); ++i) results[i].pid = pids[i];
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::size_t left = pids.size();
  std::vector<bool> done(pids.size(), false);
  while (left > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      done[i] = true;
      --left;
      results[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], nullptr, 0);
        results[i].exit_code = -2;
        results[i].report += "killed: the run outlived its limit (a hang)\n";
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipes[i], buffer, sizeof buffer)) > 0) results[i].report.append(buffer, static_cast<std::size_t>(n));
    ::close(pipes[i]);
  }
  return results;
}

// The same in a fresh store directory of its own.
template <class Fn>
std::vector<ChildResult> run_processes(int ranks, Fn fn, std::chrono::seconds limit = std::chrono::seconds(120)) {
  TempDir dir;
  return run_processes_in(dir.path(), ranks, fn, limit);
}

// Names in /dev/shm that processes `pids` created (chorus names segments "/chorus-<pid>-...").
inline std::vector<std::string> segments_of(const std::vector<int>& pids) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
    const std::string name = entry.path().filename().string();
    for (int pid : pids) {
      if (name.rfind("chorus-" + std::to_string(pid) + "-", 0) == 0) found.push_back(name);
    }
  }
  return found;
}

}  // namespace shm_harness
