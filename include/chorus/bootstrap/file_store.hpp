// A Store in a directory: each key is a file, so the processes that see the directory (one machine, or a
// shared file system) share the store and no process has to serve it. For tests, and for jobs that have a
// directory to spare but no port:
//
//   chorus::bootstrap::FileStore store("/tmp/job42", std::chrono::seconds(30));
//   store.set("segment", name);                 // any other process: store.get("segment")
//
// A value is written whole to a temporary file and rename()d over the key's file, so a reader sees the old
// value or the new one, never part of one. set() and add() hold flock() on the directory's lock file, so
// add()'s read-modify-write is atomic across processes (Linux carries flock to NFS as a byte-range lock).
// get() and wait() poll the directory with short sleeps. A key's file name is "k_" and the key with every byte
// outside [A-Za-z0-9_.-] percent-encoded, so any byte string is a key and none can name "..", the lock or a
// temporary file. The directory is created if missing and outlives the store: a job that reuses one sees the
// keys of the job before, so give each job its own.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "store.hpp"

CHORUS_NAMESPACE_BEGIN namespace bootstrap {

class FileStore final : public Store {
 public:
  FileStore(std::string directory, std::chrono::milliseconds timeout)
      : directory_(std::move(directory)), timeout_(timeout) {
    if (directory_.empty() || timeout_.count() <= 0) {
      throw fail(ErrorCode::invalid_argument, "FileStore",
                 "needs a directory and a positive timeout, got directory '", directory_, "' and ", timeout_.count(),
                 " ms");
    }
    std::error_code error;
    std::filesystem::create_directories(directory_, error);
    if (error || !std::filesystem::is_directory(directory_, error)) {
      throw fail(ErrorCode::invalid_argument, "FileStore", "cannot create the directory '", directory_,
                 "': ", error ? error.message() : std::string("a file of that name is in the way"));
    }
  }

  void set(const std::string& key, const std::string& value) override {
    const Lock lock(*this, "set", key);
    write_file(path_of(key), value, "set", key);
  }

  std::string get(const std::string& key) override {
    std::optional<std::string> value;
    poll_until("get", {key}, [&] { return (value = read_file(path_of(key), "get", key)).has_value(); });
    return *value;
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    const Lock lock(*this, "add", key);
    const std::string path = path_of(key);
    const std::string old = read_file(path, "add", key).value_or("");
    std::int64_t sum = 0;
    if (!detail::add_to_counter(old, delta, sum)) {
      throw fail(ErrorCode::invalid_argument, "add", "key ", detail::printable_bytes(key), " holds ",
                 detail::printable_bytes(old), ", not an integer that ", delta, " can be added to without overflow",
                 where());
    }
    write_file(path, std::to_string(sum), "add", key);
    return sum;
  }

  void wait(const std::vector<std::string>& keys) override {
    poll_until("wait", keys, [&] { return check(keys); });
  }

  bool check(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) {
      if (::access(path_of(key).c_str(), F_OK) != 0) return false;
    }
    return true;
  }

  std::chrono::milliseconds timeout() const override { return timeout_; }
  const std::string& directory() const { return directory_; }

 private:
  // Holds the directory's lock file for one set() or add(); the wait for it is bounded like any other.
  class Lock {
   public:
    Lock(const FileStore& store, const char* call, const std::string& key) {
      const std::string path = store.directory_ + "/.lock";
      fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        const int error = errno;
        throw store.system_error(call, key, "cannot open the lock file '" + path + "'", error);
      }
      const auto deadline = std::chrono::steady_clock::now() + store.timeout_;
      auto pause = std::chrono::microseconds(100);
      while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        if (error != EWOULDBLOCK && error != EINTR) {
          ::close(fd_);
          throw store.system_error(call, key, "cannot lock '" + path + "'", error);
        }
        if (std::chrono::steady_clock::now() >= deadline) {
          ::close(fd_);
          throw store.fail(ErrorCode::timeout, call, "key ", detail::printable_bytes(key), ": '", path,
                           "' stayed locked for ", store.timeout_.count(),
                           " ms (another process holds it: is one stopped inside set or add?)", store.where());
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(10000));
      }
    }
    ~Lock() { ::close(fd_); }  // closing the only descriptor of the lock file releases the lock
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_ = -1;
  };

  std::string path_of(const std::string& key) const {
    static const char kHex[] = "0123456789ABCDEF";
    std::string name = "k_";
    for (const char c : key) {
      const auto byte = static_cast<unsigned char>(c);
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                         c == '.' || c == '-';
      if (plain) {
        name += c;
      } else {
        name += '%';
        name += kHex[byte >> 4];
        name += kHex[byte & 15];
      }
    }
    if (name.size() > 255) {  // NAME_MAX on every Linux file system
      throw fail(ErrorCode::invalid_argument, "FileStore", "key ", detail::printable_bytes(key),
                 " is too long for a file name (", name.size(), " bytes encoded, at most 255)", where());
    }
    return directory_ + "/" + name;
  }

  // The whole file, or nothing where no one has set the key.
  std::optional<std::string> read_file(const std::string& path, const char* call, const std::string& key) const {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == ENOENT) return std::nullopt;
      throw system_error(call, key, "cannot open '" + path + "'", error);
    }
    std::string data;
    char buffer[65536];
    for (;;) {
      const ssize_t got = ::read(fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        const int error = errno;
        ::close(fd);
        throw system_error(call, key, "cannot read '" + path + "'", error);
      }
      if (got == 0) break;
      data.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
    return data;
  }

  void write_file(const std::string& path, const std::string& value, const char* call, const std::string& key) const {
    // Unique per process and per call, so two writers never share a temporary file.
    static std::atomic<unsigned long> serial{0};
    const std::string temporary =
        directory_ + "/.tmp." + std::to_string(::getpid()) + "." + std::to_string(serial.fetch_add(1));
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int error = errno;
      throw system_error(call, key, "cannot create '" + temporary + "'", error);
    }
    std::size_t done = 0;
    while (done < value.size()) {
      const ssize_t wrote = ::write(fd, value.data() + done, value.size() - done);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0) {
        const int error = errno;
        ::close(fd);
        ::unlink(temporary.c_str());
        throw system_error(call, key, "cannot write '" + temporary + "'", error);
      }
      done += static_cast<std::size_t>(wrote);
    }
    if (::close(fd) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      ::unlink(temporary.c_str());
      throw system_error(call, key, "cannot write '" + path + "'", error);
    }
  }

  // Polls `ready` with sleeps growing from 0.1 ms to 10 ms (fast when the value is nearly there, cheap when
  // it is far off) until it holds or the timeout passes.
  template <class Ready>
  void poll_until(const char* call, const std::vector<std::string>& keys, Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto pause = std::chrono::microseconds(100);
    while (!ready()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        std::vector<std::string> missing;
        for (const std::string& key : keys) {
          if (!check({key})) missing.push_back(key);
        }
        throw fail(ErrorCode::timeout, call, missing.size() == 1 ? "key " : "keys ",
                   detail::printable_keys(missing.empty() ? keys : missing), " not set within ", timeout_.count(),
                   " ms", where(), ": did every process start, with the same directory?");
      }
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }

  std::string where() const { return chorus::detail::concat(" (directory '", directory_, "')"); }

  template <class... Parts>
  Error fail(ErrorCode code, const char* call, const Parts&... parts) const {
    return Error(code, chorus::detail::concat("chorus::bootstrap::FileStore::", call, " in process ", ::getpid(), ": ",
                                              parts...));
  }

  Error system_error(const char* call, const std::string& key, const std::string& what, int error) const {
    return fail(ErrorCode::invalid_argument, call, "key ", detail::printable_bytes(key), ": ", what, ": ",
                std::generic_category().message(error));
  }

  std::string directory_;
  std::chrono::milliseconds timeout_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::bootstrap
