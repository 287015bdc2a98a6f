// A Store over TCP, as torch's env:// and NCCL's bootstrap have: rank 0 serves it from a background thread, and
// every process, rank 0 too, is a client of it at the address the launcher gives (MASTER_ADDR:MASTER_PORT, or
// CHORUS_STORE=tcp://HOST:PORT; store_address.hpp reads them):
//
//   chorus::bootstrap::TcpStore store("node0", 29500, /*is_server=*/rank == 0, std::chrono::seconds(30));
//   store.add("arrived", 1);
//   const std::string name = store.get("segment");
//
// The protocol is request and answer frames: a 4-byte big-endian length, then a byte naming the operation and its
// fields (a string is a 4-byte length and its bytes, an integer 8 bytes big-endian). The server answers set, add,
// check and a get that does not wait; a client waits in get() and wait() by asking again after short pauses, so
// every wait is bounded by the client's own timeout and the server holds nothing for a waiter. A frame over
// 64 MiB, or one that does not parse, ends that client's connection and nothing else.
//
// The server listens on every IPv4 interface with SO_REUSEADDR, so a new job can take the port of one killed a
// moment ago. It serves until its TcpStore is destroyed, so rank 0 must keep its store until the other processes
// are done with it (finish with an exchange that rank 0 waits for). Clients retry connecting until the timeout,
// since rank 0 may start last. Port 0 with is_server takes a free port, which port() gives: for tests.
// A process forked while holding a TcpStore must not use the copy (it shares the parent's connection); destroying
// it is safe (the child has no server thread to stop).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "store.hpp"

CHORUS_NAMESPACE_BEGIN namespace bootstrap {

namespace detail::tcp {

using Clock = std::chrono::steady_clock;

// A frame's body may not exceed this, either way: a peer that sends more is not a chorus store.
inline constexpr std::uint32_t kMaxFrame = 64u << 20;

enum Operation : std::uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4 };
enum Status : std::uint8_t { kOk = 0, kAbsent = 1, kRefused = 2 };

inline void put_u32(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}
inline void put_u64(std::string& out, std::uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}
inline void put_string(std::string& out, const std::string& text) {
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

// Reads a frame's fields; any read past the end clears ok() instead of reading, so a malformed frame costs nothing.
class Reader {
 public:
  explicit Reader(const std::string& frame, std::size_t at = 0) : frame_(frame), at_(at) {}
  std::uint64_t integer(int bytes) {
    if (!take(static_cast<std::size_t>(bytes))) return 0;
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value = value << 8 | static_cast<unsigned char>(frame_[at_ - bytes + i]);
    return value;
  }
  std::string text() {
    const auto size = static_cast<std::size_t>(integer(4));
    if (!take(size)) return {};
    return frame_.substr(at_ - size, size);
  }
  std::size_t left() const { return frame_.size() - at_; }
  bool ok() const { return ok_; }
  bool done() const { return ok_ && at_ == frame_.size(); }

 private:
  bool take(std::size_t bytes) {
    if (!ok_ || left() < bytes) return ok_ = false;
    at_ += bytes;
    return true;
  }
  const std::string& frame_;
  std::size_t at_;
  bool ok_ = true;
};

class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(Descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Descriptor() { reset(); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

inline std::string error_text(int error) { return std::generic_category().message(error); }

// The store's data and the loop that serves it, on a thread of its own. One poll() over every client: a store
// sees a few messages per process per job, far too few to need more.
class Server {
 public:
  // Throws the reason as text; TcpStore words the error.
  explicit Server(int port) {
    listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener_) throw std::system_error(errno, std::generic_category(), "socket");
    const int on = 1;
    ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_.get(), SOMAXCONN) != 0) {
      throw std::system_error(errno, std::generic_category(), "bind");
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    int ends[2];
    if (::pipe2(ends, O_NONBLOCK | O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    wake_read_.reset(ends[0]);
    wake_write_.reset(ends[1]);
    owner_ = ::getpid();
    thread_ = std::make_unique<std::thread>([this] { serve(); });
  }

  ~Server() {
    if (::getpid() != owner_) {  // a forked child: the thread is not in this process, so neither stop nor join it
      (void)thread_.release();
      return;
    }
    const char byte = 1;
    while (::write(wake_write_.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    thread_->join();
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }

 private:
  struct Client {
    Descriptor fd;
    std::string in, out;
    std::size_t out_at = 0;
  };

  void serve() noexcept {
    std::vector<pollfd> polled;
    try {
      for (;;) {
        polled.clear();
        polled.push_back({wake_read_.get(), POLLIN, 0});
        polled.push_back({listener_.get(), POLLIN, 0});
        for (const Client& client : clients_) {
          const short want = client.out_at < client.out.size() ? POLLIN | POLLOUT : POLLIN;
          polled.push_back({client.fd.get(), want, 0});
        }
        // Unbounded on purpose: the server waits for requests, not for a peer, and the destructor wakes it.
        if (::poll(polled.data(), polled.size(), -1) < 0) {
          if (errno == EINTR) continue;
          break;
        }
        if (polled[0].revents != 0) break;
        if (polled[1].revents & POLLIN) accept_all();
        std::vector<Client> kept;
        for (std::size_t i = 0; i + 2 < polled.size(); ++i) {
          Client& client = clients_[i];
          const short events = polled[i + 2].revents;
          bool alive = true;
          if (events & (POLLIN | POLLHUP | POLLERR)) alive = receive(client);
          if (alive && client.out_at < client.out.size()) alive = flush(client);
          if (alive) kept.push_back(std::move(client));
        }
        for (std::size_t i = polled.size() - 2; i < clients_.size(); ++i) kept.push_back(std::move(clients_[i]));
        clients_ = std::move(kept);
      }
    } catch (...) {  // out of memory: stop serving
    }
    clients_.clear();    // every client sees its connection close,
    listener_.reset();   // and a new one is refused instead of waiting in the backlog until its timeout
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        const int on = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        clients_.push_back(Client{Descriptor(fd), {}, {}, 0});
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors: the pending connection stays queued and poll() would report it at once again.
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
  }

  // Reads what the client sent and answers every whole request; false ends the connection.
  bool receive(Client& client) {
    char buffer[65536];
    for (;;) {
      const ssize_t got = ::recv(client.fd.get(), buffer, sizeof buffer, 0);
      if (got > 0) {
        client.in.append(buffer, static_cast<std::size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;  // closed by the peer, or reset
    }
    std::size_t at = 0;
    while (client.in.size() - at >= 4) {
      const auto size = static_cast<std::uint32_t>(Reader(client.in, at).integer(4));
      if (size == 0 || size > kMaxFrame) return false;
      if (client.in.size() - at - 4 < size) break;
      if (!answer(client.in.substr(at + 4, size), client.out)) return false;
      at += 4 + size;
    }
    client.in.erase(0, at);
    return true;
  }

  bool flush(Client& client) {
    while (client.out_at < client.out.size()) {
      const ssize_t sent = ::send(client.fd.get(), client.out.data() + client.out_at, client.out.size() - client.out_at,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent >= 0) {
        client.out_at += static_cast<std::size_t>(sent);
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return true;
      } else if (errno != EINTR) {
        return false;
      }
    }
    client.out.clear();
    client.out_at = 0;
    return true;
  }

  // Appends the answer to `request` to `out`; false where the request is malformed.
  bool answer(const std::string& request, std::string& out) {
    Reader reader(request);
    const auto operation = static_cast<Operation>(reader.integer(1));
    std::string body;
    if (operation == kSet) {
      std::string key = reader.text();
      std::string value = reader.text();
      if (!reader.done()) return false;
      data_[std::move(key)] = std::move(value);
      body += static_cast<char>(kOk);
    } else if (operation == kGet) {
      const std::string key = reader.text();
      if (!reader.done()) return false;
      const auto found = data_.find(key);
      body += static_cast<char>(found == data_.end() ? kAbsent : kOk);
      if (found != data_.end()) body += found->second;
    } else if (operation == kAdd) {
      const std::string key = reader.text();
      const auto delta = static_cast<std::int64_t>(reader.integer(8));
      if (!reader.done()) return false;
      std::string& value = data_[key];
      std::int64_t sum = 0;
      if (detail::add_to_counter(value, delta, sum)) {
        value = std::to_string(sum);
        body += static_cast<char>(kOk);
        put_u64(body, static_cast<std::uint64_t>(sum));
      } else {
        body += static_cast<char>(kRefused);
        body += value;
      }
    } else if (operation == kCheck) {
      const auto count = static_cast<std::size_t>(reader.integer(4));
      if (!reader.ok() || count > reader.left() / 4) return false;
      body += static_cast<char>(kOk);
      for (std::size_t i = 0; i < count; ++i) body += static_cast<char>(data_.count(reader.text()) != 0);
      if (!reader.done()) return false;
    } else {
      return false;
    }
    if (body.size() > kMaxFrame) return false;  // a 64 MiB value read back: the client could not take it either
    put_u32(out, static_cast<std::uint32_t>(body.size()));
    out += body;
    return true;
  }

  Descriptor listener_, wake_read_, wake_write_;
  int port_ = 0;
  pid_t owner_ = 0;
  std::vector<Client> clients_;                // only the server thread touches these two
  std::map<std::string, std::string> data_;
  std::unique_ptr<std::thread> thread_;        // last: started once everything above exists
};

}  // namespace detail::tcp

class TcpStore final : public Store {
 public:
  TcpStore(std::string host, int port, bool is_server, std::chrono::milliseconds timeout)
      : host_(std::move(host)), port_(port), timeout_(timeout) {
    if (host_.empty() || port < (is_server ? 0 : 1) || port > 65535 || timeout_.count() <= 0) {
      throw fail(ErrorCode::invalid_argument, "TcpStore", "needs a host, a port in 1..65535 (0 for a server: any "
                 "free port) and a positive timeout, got '", host_, "', port ", port, ", ", timeout_.count(), " ms");
    }
    if (is_server) {
      try {
        server_ = std::make_unique<detail::tcp::Server>(port);
      } catch (const std::system_error& error) {
        throw fail(ErrorCode::invalid_argument, "TcpStore", "cannot serve port ", port, ": ",
                   error.code().message(), error.code() == std::errc::address_in_use ?
                   " (another program or job holds it; under torchrun, whose agent may serve its own store at "
                   "MASTER_PORT, give chorus another: CHORUS_STORE=tcp://HOST:PORT)" : "");
      }
      port_ = server_->port();
    }
    connect(detail::tcp::Clock::now() + timeout_);
  }

  void set(const std::string& key, const std::string& value) override {
    std::string request(1, static_cast<char>(detail::tcp::kSet));
    detail::tcp::put_string(request, key);
    detail::tcp::put_string(request, value);
    ask("set", key, request, detail::tcp::Clock::now() + timeout_);
  }

  std::string get(const std::string& key) override {
    std::string request(1, static_cast<char>(detail::tcp::kGet));
    detail::tcp::put_string(request, key);
    std::string answer;
    poll_until("get", {key}, [&] { return (answer = ask("get", key, request, deadline_))[0] == detail::tcp::kOk; });
    return answer.substr(1);
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::string request(1, static_cast<char>(detail::tcp::kAdd));
    detail::tcp::put_string(request, key);
    detail::tcp::put_u64(request, static_cast<std::uint64_t>(delta));
    const std::string answer = ask("add", key, request, detail::tcp::Clock::now() + timeout_);
    if (answer[0] == detail::tcp::kRefused) {
      throw fail(ErrorCode::invalid_argument, "add", "key ", detail::printable_bytes(key), " holds ",
                 detail::printable_bytes(answer.substr(1)), ", not an integer that ", delta,
                 " can be added to without overflow", where());
    }
    detail::tcp::Reader reader(answer, 1);
    const auto sum = static_cast<std::int64_t>(reader.integer(8));
    if (answer[0] != detail::tcp::kOk || !reader.done()) throw malformed("add", key);
    return sum;
  }

  void wait(const std::vector<std::string>& keys) override {
    poll_until("wait", keys, [&] { return missing(keys, deadline_).empty(); });
  }

  bool check(const std::vector<std::string>& keys) override {
    return missing(keys, detail::tcp::Clock::now() + timeout_).empty();
  }

  std::chrono::milliseconds timeout() const override { return timeout_; }
  const std::string& host() const { return host_; }
  int port() const { return port_; }  // the one the server took, where it was given 0

 private:
  using Clock = detail::tcp::Clock;

  // Connects, retrying while no one listens yet; a host that does not resolve is wrong at once.
  void connect(Clock::time_point deadline) {
    auto pause = std::chrono::milliseconds(10);
    std::string last = "no answer";
    for (;;) {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      const int resolved = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
      if (resolved != 0 && resolved != EAI_AGAIN) {
        throw fail(ErrorCode::invalid_argument, "TcpStore", "cannot resolve the store's host '", host_,
                   "' to an IPv4 address: ", ::gai_strerror(resolved));
      }
      if (resolved == EAI_AGAIN) last = ::gai_strerror(resolved);
      for (addrinfo* address = found; address != nullptr && !socket_; address = address->ai_next) {
        last = try_connect(*address, deadline);
      }
      if (found != nullptr) ::freeaddrinfo(found);
      if (socket_) return;
      const auto now = Clock::now();
      if (now >= deadline) {
        throw fail(ErrorCode::timeout, "TcpStore", "no store server at ", host_, ":", port_, " within ",
                   timeout_.count(), " ms (", last, "): no one serves it. Rank 0 serves the store; did it start, "
                   "with the same address?");
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
      pause = std::min(pause * 2, std::chrono::milliseconds(100));
    }
  }

  // Sets socket_ on success; otherwise says why not.
  std::string try_connect(const addrinfo& address, Clock::time_point deadline) {
    detail::tcp::Descriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return detail::tcp::error_text(errno);
    int error = 0;
    if (::connect(fd.get(), address.ai_addr, address.ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        if (!ready(fd.get(), POLLOUT, deadline)) return "no answer";
        socklen_t length = sizeof error;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
      }
    }
    if (error != 0) return detail::tcp::error_text(error);
    const int on = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    socket_ = std::move(fd);
    return {};
  }

  // Whether `fd` became ready for `events` before the deadline.
  static bool ready(int fd, short events, Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd polled{fd, events, 0};
      const int n = ::poll(&polled, 1, static_cast<int>(std::clamp<long long>(left + 1, 0, 1 << 30)));
      if (n > 0) return true;
      if (n == 0 && Clock::now() >= deadline) return false;
      if (n < 0 && errno != EINTR) return false;
    }
  }

  // Sends one request and returns its answer's body (at least its status byte). A request that finds the
  // deadline past still gets a short grace, so the last poll of a get() can be answered.
  std::string ask(const char* call, const std::string& key, const std::string& request, Clock::time_point deadline) {
    deadline = std::max(deadline, Clock::now() + std::min<Clock::duration>(timeout_, std::chrono::seconds(1)));
    if (request.size() > detail::tcp::kMaxFrame) {
      throw fail(ErrorCode::invalid_argument, call, "key ", detail::printable_bytes(key), ": a request of ",
                 request.size(), " bytes is over the store's limit of ", detail::tcp::kMaxFrame, " bytes", where());
    }
    if (!socket_) connect(deadline);
    std::string frame;
    detail::tcp::put_u32(frame, static_cast<std::uint32_t>(request.size()));
    frame += request;
    transfer(call, key, &frame[0], frame.size(), true, deadline);
    std::string header(4, '\0');
    transfer(call, key, &header[0], 4, false, deadline);
    const auto size = static_cast<std::uint32_t>(detail::tcp::Reader(header).integer(4));
    if (size == 0 || size > detail::tcp::kMaxFrame) throw malformed(call, key);
    std::string answer(size, '\0');
    transfer(call, key, &answer[0], size, false, deadline);
    return answer;
  }

  // Sends or receives exactly `size` bytes before the deadline. A failure leaves the connection in an unknown
  // state, so it is dropped: the next call connects again.
  void transfer(const char* call, const std::string& key, char* data, std::size_t size, bool sending,
                Clock::time_point deadline) {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t moved = sending ? ::send(socket_.get(), data + done, size - done, MSG_NOSIGNAL)
                                    : ::recv(socket_.get(), data + done, size - done, 0);
      if (moved > 0) {
        done += static_cast<std::size_t>(moved);
        continue;
      }
      const int error = moved < 0 ? errno : 0;
      if (error == EINTR) continue;
      if ((error == EAGAIN || error == EWOULDBLOCK) && ready(socket_.get(), sending ? POLLOUT : POLLIN, deadline)) {
        continue;
      }
      socket_.reset();
      if (error == EAGAIN || error == EWOULDBLOCK) {
        throw fail(ErrorCode::timeout, call, "key ", detail::printable_bytes(key),
                   ": the store server did not answer in time", where());
      }
      throw fail(ErrorCode::peer_failed, call, "key ", detail::printable_bytes(key), ": the store server closed the "
                 "connection (", error != 0 ? detail::tcp::error_text(error) : std::string("end of stream"),
                 "): did rank 0 exit, or destroy its TcpStore?", where());
    }
  }

  // The keys in `keys` that no one has set.
  std::vector<std::string> missing(const std::vector<std::string>& keys, Clock::time_point deadline) {
    std::string request(1, static_cast<char>(detail::tcp::kCheck));
    detail::tcp::put_u32(request, static_cast<std::uint32_t>(keys.size()));
    for (const std::string& key : keys) detail::tcp::put_string(request, key);
    const std::string first = keys.empty() ? std::string() : keys[0];
    const std::string answer = ask("check", first, request, deadline);
    if (answer[0] != detail::tcp::kOk || answer.size() != keys.size() + 1) throw malformed("check", first);
    std::vector<std::string> unset;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (answer[i + 1] == 0) unset.push_back(keys[i]);
    }
    return unset;
  }

  // Asks `ready` again after pauses growing from 1 ms to 10 ms until it holds or the timeout passes. deadline_
  // is the whole wait's, for `ready`'s requests.
  template <class Ready>
  void poll_until(const char* call, const std::vector<std::string>& keys, Ready ready) {
    deadline_ = Clock::now() + timeout_;
    auto pause = std::chrono::milliseconds(1);
    while (!ready()) {
      const auto now = Clock::now();
      if (now >= deadline_) {
        std::vector<std::string> unset = keys.size() == 1 ? keys : missing(keys, now);
        if (unset.empty()) return;  // set during the last pause
        throw fail(ErrorCode::timeout, call, unset.size() == 1 ? "key " : "keys ", detail::printable_keys(unset),
                   " not set within ", timeout_.count(), " ms", where(), ": did every process start?");
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline_ - now));
      pause = std::min(pause * 2, std::chrono::milliseconds(10));
    }
  }

  Error malformed(const char* call, const std::string& key) {
    socket_.reset();
    return fail(ErrorCode::invalid_argument, call, "key ", detail::printable_bytes(key), ": the answer does not "
                "parse: is what listens at this address a chorus TcpStore?", where());
  }

  std::string where() const { return chorus::detail::concat(" (store at ", host_, ":", port_, ")"); }

  template <class... Parts>
  Error fail(ErrorCode code, const char* call, const Parts&... parts) const {
    return Error(code, chorus::detail::concat("chorus::bootstrap::TcpStore::", call, " in process ", ::getpid(), ": ",
                                              parts...));
  }

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<detail::tcp::Server> server_;  // before socket_: the client closes first, then the server stops
  detail::tcp::Descriptor socket_;
  Clock::time_point deadline_{};
};

}  CHORUS_NAMESPACE_END  // namespace chorus::bootstrap
