// A POSIX shared-memory segment (shm_open + mmap) laid out as layout.hpp says. Rank 0 creates it
// under a fresh name; the others open the name; rank 0 unlinks the name as soon as every rank has
// mapped it, so from then on no exit, crash or kill -9 can leave anything in /dev/shm: the memory
// goes when the last process unmaps it.
//
// A name is "/chorus-<pid>-<comm>-<random>": unique on the machine while its creator lives. A joining
// rank checks that the segment's creator is still alive before it trusts it, so a name left behind
// by a job killed during setup (and still in a file store) is never joined: it is unlinked instead.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <random>
#include <string>
#include <utility>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "layout.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::int32_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free to work across processes");

// Whether process `pid` is running (a zombie is not: it has died and waits to be reaped).
inline bool process_alive(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;  // no /proc: trust kill()
  std::string line;
  std::getline(stat, line);
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  const char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

// This process's pid namespace (0 when /proc does not say): a peer's pid means something here only
// when both are in the same one (containers sharing /dev/shm through --ipc=host are not).
inline std::uint64_t pid_namespace() {
  struct stat info {};
  return ::stat("/proc/self/ns/pid", &info) == 0 ? static_cast<std::uint64_t>(info.st_ino) : 0;
}

// Whether the segment's creator still runs, as far as this process can tell (one in another pid
// namespace is assumed alive: its pid means nothing here).
inline bool creator_alive(const Header& h) {
  return h.creator_pid_namespace == 0 || h.creator_pid_namespace != pid_namespace() || process_alive(h.creator_pid);
}

inline std::string fresh_name(unsigned comm_number) {
  std::random_device device;
  char name[96];
  std::snprintf(name, sizeof name, "/chorus-%d-%u-%08x%08x", static_cast<int>(::getpid()), comm_number, device(),
                device());
  return name;
}

class Segment {
 public:
  Segment() = default;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  Segment(Segment&& other) noexcept { *this = std::move(other); }
  Segment& operator=(Segment&& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(bytes_, other.bytes_);
    std::swap(name_, other.name_);
    std::swap(linked_, other.linked_);
    return *this;
  }
  ~Segment() {
    unlink();
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }

  // Creates and maps a new segment for `layout`, writing its header. `call` and `rank` name errors.
  static Segment create(const Layout& layout, unsigned comm_number, const char* call, int rank) {
    Segment s;
    s.name_ = fresh_name(comm_number);
    const int fd = ::shm_open(s.name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throw system_error(call, rank, "shm_open(" + s.name_ + ", O_CREAT)");
    s.linked_ = true;
    // Reserved now, not at first touch: a /dev/shm too small for the segment (a container's 64 MiB
    // default) is an error here rather than a SIGBUS in the middle of a collective.
    const int reserved = ::posix_fallocate(fd, 0, static_cast<off_t>(layout.total));
    if (reserved != 0) {
      errno = reserved;
      const Error e = system_error(call, rank, concat_size("reserving ", layout.total));
      ::close(fd);
      throw e;
    }
    s.map(fd, layout.total, call, rank);
    Header* h = new (s.base_) Header{};  // the file is zero-filled: every counter starts at 0
    h->magic = kMagic;
    h->version = kLayoutVersion;
    h->ranks = layout.ranks;
    h->slot_bytes = layout.slot_bytes;
    h->slots = layout.slots;
    h->creator_pid = static_cast<std::int32_t>(::getpid());
    h->creator_pid_namespace = pid_namespace();
    return s;
  }

  // Opens and maps the segment `name`, which must hold a layout for `ranks` ranks. Throws
  // chorus::Error(invalid_argument) for a segment of another size or version, and returns an
  // empty Segment (unlinking the name) when its creator is dead: a stale name.
  static Segment open(const std::string& name, int ranks, const char* call, int rank) {
    Segment s;
    const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) {
      if (errno == ENOENT) return s;  // already unlinked: a stale name, or rank 0 gave up
      throw system_error(call, rank, "shm_open(" + name + ")");
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || info.st_size < static_cast<off_t>(sizeof(Header))) {
      ::close(fd);
      return s;  // created but not yet sized: not a segment rank 0 has published
    }
    s.map(fd, static_cast<std::size_t>(info.st_size), call, rank);
    s.name_ = name;
    const Header& h = s.header();
    if (h.magic != kMagic || h.version != kLayoutVersion) {
      throw make_error(ErrorCode::invalid_argument, call, rank, "shared-memory segment ", name,
                       " is not a chorus segment of layout version ", kLayoutVersion);
    }
    if (!creator_alive(h)) {
      s.linked_ = true;  // its creator is gone: clean up the name it left
      return Segment();
    }
    if (h.ranks != ranks) {
      throw make_error(ErrorCode::invalid_argument, call, rank, "WORLD_SIZE disagrees: this process was started for ",
                       ranks, " ranks, rank 0 (pid ", h.creator_pid, ") for ", h.ranks);
    }
    return s;
  }

  explicit operator bool() const { return base_ != nullptr; }
  const std::string& name() const { return name_; }
  std::size_t bytes() const { return bytes_; }
  std::byte* base() const { return static_cast<std::byte*>(base_); }
  Header& header() const { return *static_cast<Header*>(base_); }

  // Removes the name (the memory stays while mapped). Idempotent.
  void unlink() {
    if (linked_) ::shm_unlink(name_.c_str());
    linked_ = false;
  }

 private:
  void map(int fd, std::size_t bytes, const char* call, int rank) {
    void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int saved = errno;
    ::close(fd);
    if (at == MAP_FAILED) {
      errno = saved;
      throw system_error(call, rank, concat_size("mmap of ", bytes));
    }
    base_ = at;
    bytes_ = bytes;
  }

  static std::string concat_size(const char* what, std::size_t bytes) {
    return chorus::detail::concat(what, bytes, " bytes");
  }

  static Error system_error(const char* call, int rank, const std::string& what) {
    const int saved = errno;
    return make_error(saved == ENOMEM || saved == ENOSPC ? ErrorCode::unsupported : ErrorCode::internal, call, rank,
                      what, " failed: ", std::strerror(saved),
                      saved == ENOSPC || saved == ENOMEM ? " (is /dev/shm large enough? docker: --shm-size)" : "");
  }

  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::string name_;
  bool linked_ = false;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
