// The two Stores through the same checks (a template over a factory that makes a first store and the store
// another process would hold), then each one's own faults, and the address the environment gives.
// Waits use short timeouts (200 ms) so a timeout test stays well under a second; forked processes report by
// exit status only, and the parent bounds its wait for them.
#include <catch2/catch.hpp>

#include <chorus/bootstrap/file_store.hpp>
#include <chorus/bootstrap/store_address.hpp>
#include <chorus/bootstrap/tcp_store.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace test_store {

namespace {
using chorus::Error;
using chorus::ErrorCode;
using chorus::bootstrap::FileStore;
using chorus::bootstrap::Store;
using chorus::bootstrap::TcpStore;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kShort{200};  // for waits that must time out
constexpr milliseconds kLong{4000};  // for waits that must not

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct TemporaryDirectory {
  std::string path;
  TemporaryDirectory() {
    char name[] = "/tmp/chorus_test_store_XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// A port no one listens on: bound (so no one else takes it) but not listening, so a connect is refused.
struct UnservedPort {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  UnservedPort() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }
  ~UnservedPort() { ::close(fd); }
};

// first(): the store of the process that starts the job (a TCP store's server); other(): another process's.
// A child forked before first() learns what it needs (the TCP port) once first() has run.
struct FileFactory {
  TemporaryDirectory directory;
  std::string path = directory.path + "/store/nested";  // the store creates what is missing
  void expect_children(int) {}
  std::unique_ptr<Store> first(milliseconds timeout) { return std::make_unique<FileStore>(path, timeout); }
  std::unique_ptr<Store> other(milliseconds timeout) { return std::make_unique<FileStore>(path, timeout); }
  std::string address() const { return path; }
};

struct TcpFactory {
  int port = 0;
  int children = 0;
  int ends[2] = {-1, -1};  // the port, once per child
  TcpFactory() { REQUIRE(::pipe(ends) == 0); }
  ~TcpFactory() {
    ::close(ends[0]);
    ::close(ends[1]);
  }
  void expect_children(int n) { children = n; }
  std::unique_ptr<Store> first(milliseconds timeout) {
    auto store = std::make_unique<TcpStore>("127.0.0.1", 0, true, timeout);
    port = store->port();
    for (int i = 0; i < children; ++i) REQUIRE(::write(ends[1], &port, sizeof port) == sizeof port);
    return store;
  }
  std::unique_ptr<Store> other(milliseconds timeout) {
    if (port == 0) {  // a child: wait (bounded) for the parent's server
      pollfd polled{ends[0], POLLIN, 0};
      if (::poll(&polled, 1, 3000) != 1 || ::read(ends[0], &port, sizeof port) != sizeof port) throw "no port";
    }
    return std::make_unique<TcpStore>("127.0.0.1", port, false, timeout);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

// Runs `body` in a forked child, which exits with body's result (3 if it threw). Only the child calls body.
template <class Body>
pid_t fork_child(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int status = 3;
    try {
      status = body();
    } catch (...) {
    }
    ::_exit(status);
  }
  REQUIRE(pid > 0);
  return pid;
}

// Each child's exit status, or -1 for one still running after `limit` (then killed).
std::vector<int> wait_children(const std::vector<pid_t>& pids, milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  std::vector<int> statuses;
  for (const pid_t pid : pids) {
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      statuses.push_back(-1);
    } else {
      statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
    }
  }
  return statuses;
}

// The error `call` throws; fails the test where it throws nothing.
template <class Call>
Error error_of(Call call) {
  try {
    call();
  } catch (const Error& error) {
    return error;
  }
  FAIL("no chorus::Error thrown");
  return Error(ErrorCode::internal, "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEMPLATE_TEST_CASE("a store gives back any bytes set under any key", "[bootstrap][store]", FileFactory, TcpFactory) {
  TestType factory;
  auto first = factory.first(kLong);
  auto other = factory.other(kLong);
  const std::string zeros("a\0b\0\0c", 6);
  std::string every_byte;
  for (int i = 0; i < 256; ++i) every_byte += static_cast<char>(i);
  const std::string large(1 << 20, '\x5a');
  const std::vector<std::string> keys = {"plain", "a/b", "..", ".lock", std::string("nul\0key", 7), "%41", ""};

  CHECK_FALSE(other->check({"plain"}));
  for (std::size_t i = 0; i < keys.size(); ++i) first->set(keys[i], zeros + keys[i]);
  first->set("every byte", every_byte);
  first->set("empty", "");
  other->set("large", large);
  for (std::size_t i = 0; i < keys.size(); ++i) CHECK(other->get(keys[i]) == zeros + keys[i]);
  CHECK(other->get("every byte") == every_byte);
  CHECK(other->get("empty").empty());
  CHECK(first->get("large") == large);
  CHECK_FALSE(other->check({"A"}));  // "%41" is a key of its own, not the file name of "A"
  CHECK(other->check(keys));
  other->wait(keys);
  other->wait({});

  first->set("plain", "replaced");
  CHECK(other->get("plain") == "replaced");
}

TEMPLATE_TEST_CASE("add counts from 0 and refuses a value that is not a number", "[bootstrap][store]", FileFactory,
                   TcpFactory) {
  TestType factory;
  auto first = factory.first(kLong);
  auto other = factory.other(kLong);
  CHECK(first->add("counter", 1) == 1);
  CHECK(other->add("counter", 5) == 6);
  CHECK(first->add("counter", -10) == -4);
  CHECK(other->get("counter") == "-4");  // torch's stores keep counters as decimal text too
  CHECK(other->add("counter", 0) == -4);

  first->set("word", std::string("x\0y", 3));
  Error error = error_of([&] { other->add("word", 1); });
  CHECK(error.code() == ErrorCode::invalid_argument);
  CHECK(contains(error.what(), "add"));
  CHECK(contains(error.what(), "'word'"));
  CHECK(contains(error.what(), "'x\\x00y'"));
  CHECK(other->get("word") == std::string("x\0y", 3));  // left as it was

  first->set("top", "9223372036854775807");
  error = error_of([&] { other->add("top", 1); });
  CHECK(error.code() == ErrorCode::invalid_argument);
  CHECK(contains(error.what(), "overflow"));
}

TEMPLATE_TEST_CASE("a get or wait for a key no one sets times out, naming it", "[bootstrap][store]", FileFactory,
                   TcpFactory) {
  TestType factory;
  auto first = factory.first(kLong);
  auto other = factory.other(kShort);
  CHECK(other->timeout() == kShort);
  first->set("present", "1");

  auto start = Clock::now();
  Error error = error_of([&] { other->get("missing key"); });
  double waited = seconds_since(start);
  CHECK(error.code() == ErrorCode::timeout);
  CHECK(contains(error.what(), "get"));
  CHECK(contains(error.what(), "'missing key'"));
  CHECK(contains(error.what(), "200 ms"));
  CHECK(contains(error.what(), factory.address()));
  CHECK(waited >= 0.19);
  CHECK(waited < 0.5);  // the timeout and a last poll, not a multiple of it

  start = Clock::now();
  error = error_of([&] { other->wait({"present", "absent"}); });
  waited = seconds_since(start);
  CHECK(error.code() == ErrorCode::timeout);
  CHECK(contains(error.what(), "wait"));
  CHECK(contains(error.what(), "key 'absent'"));
  CHECK_FALSE(contains(error.what(), "'present'"));  // only what is missing
  CHECK(waited >= 0.19);
  CHECK(waited < 0.5);  // the timeout and a last poll, not a multiple of it
}

TEMPLATE_TEST_CASE("add from several processes counts every add", "[bootstrap][store]", FileFactory, TcpFactory) {
  constexpr int kChildren = 4, kAdds = 100;
  TestType factory;
  factory.expect_children(kChildren);
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {  // forked before the server's thread exists
    children.push_back(fork_child([&] {
      auto store = factory.other(kLong);
      std::int64_t last = 0;
      for (int i = 0; i < kAdds; ++i) {
        const std::int64_t now = store->add("counter", 1);
        if (now <= last || now > kChildren * kAdds) return 1;  // another process's add went missing or twice
        last = now;
      }
      return 0;
    }));
  }
  auto store = factory.first(kLong);
  CHECK(wait_children(children, milliseconds(4000)) == std::vector<int>(kChildren, 0));
  CHECK(store->add("counter", 0) == kChildren * kAdds);
  CHECK(store->get("counter") == std::to_string(kChildren * kAdds));
}

TEST_CASE("FileStore keeps every key inside its directory", "[bootstrap][store]") {
  TemporaryDirectory directory;
  FileStore store(directory.path, kShort);
  store.set("../escaped", "1");
  store.set("/etc/passwd", "1");
  store.add("a b", 1);
  for (const auto& entry : std::filesystem::directory_iterator(directory.path)) {
    const std::string name = entry.path().filename().string();
    CHECK((name.rfind("k_", 0) == 0 || name == ".lock"));
  }
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(directory.path).parent_path() / "escaped"));
}

TEST_CASE("FileStore refuses a directory it cannot create and a key too long for a file name", "[bootstrap][store]") {
  TemporaryDirectory directory;
  std::ofstream(directory.path + "/file") << "in the way";
  Error error = error_of([&] { FileStore(directory.path + "/file/store", kShort); });
  CHECK(error.code() == ErrorCode::invalid_argument);
  CHECK(contains(error.what(), "'" + directory.path + "/file/store'"));

  FileStore store(directory.path, kShort);
  error = error_of([&] { store.set(std::string(100, '/'), "1"); });  // 300 bytes encoded
  CHECK(error.code() == ErrorCode::invalid_argument);
  CHECK(contains(error.what(), "too long"));
}

TEST_CASE("TcpStore: a client with no server times out naming the address", "[bootstrap][store]") {
  UnservedPort unserved;
  const auto start = Clock::now();
  const Error error = error_of([&] { TcpStore("127.0.0.1", unserved.port, false, kShort); });
  const double waited = seconds_since(start);
  CHECK(error.code() == ErrorCode::timeout);
  CHECK(contains(error.what(), "127.0.0.1:" + std::to_string(unserved.port)));
  CHECK(contains(error.what(), "no one serves it"));
  CHECK(waited >= 0.19);
  CHECK(waited < 0.5);  // the timeout and a last poll, not a multiple of it
  CHECK(error_of([] { TcpStore("no-such-host.invalid", 1, false, kShort); }).code() == ErrorCode::invalid_argument);
}

TEST_CASE("TcpStore: a client started before its server connects once it serves", "[bootstrap][store]") {
  int port = 0;
  {
    UnservedPort reserved;  // a free port, given back just before the server takes it
    port = reserved.port;
  }
  const pid_t server = fork_child([&] {
    std::this_thread::sleep_for(milliseconds(300));
    TcpStore store("127.0.0.1", port, true, kLong);
    return store.get("client") == "connected" ? 0 : 1;
  });
  const auto start = Clock::now();
  TcpStore client("127.0.0.1", port, false, kLong);
  CHECK(seconds_since(start) >= 0.25);
  client.set("client", "connected");
  CHECK(wait_children({server}, milliseconds(4000)) == std::vector<int>{0});
}

TEST_CASE("TcpStore: a port in use is a clear error", "[bootstrap][store]") {
  TcpStore first("127.0.0.1", 0, true, kShort);
  const Error error = error_of([&] { TcpStore("127.0.0.1", first.port(), true, kShort); });
  CHECK(error.code() == ErrorCode::invalid_argument);
  CHECK(contains(error.what(), "cannot serve port " + std::to_string(first.port())));
  CHECK(contains(error.what(), "in use"));
}

TEST_CASE("TcpStore: destroying the server with clients connected neither hangs nor leaves them waiting",
          "[bootstrap][store]") {
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, true, kLong);
  const int port = server->port();
  TcpStore a("127.0.0.1", port, false, kLong), b("127.0.0.1", port, false, kLong);
  a.set("a", "1");
  CHECK(b.get("a") == "1");

  auto start = Clock::now();
  server.reset();
  CHECK(seconds_since(start) < 0.5);

  start = Clock::now();
  const Error error = error_of([&] { b.get("never"); });
  CHECK(error.code() == ErrorCode::peer_failed);
  CHECK(contains(error.what(), "127.0.0.1:" + std::to_string(port)));
  CHECK(seconds_since(start) < 0.5);  // at once, not after the 4 s timeout
}

TEST_CASE("TcpStore: a new server takes the port of one just destroyed", "[bootstrap][store]") {
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, true, kLong);
  const int port = server->port();
  auto client = std::make_unique<TcpStore>("127.0.0.1", port, false, kLong);
  client->set("old job", "1");
  server.reset();  // the server closes first: its side of each connection waits in TIME_WAIT on the port
  client.reset();

  TcpStore next("127.0.0.1", port, true, kLong);
  TcpStore next_client("127.0.0.1", port, false, kLong);
  CHECK_FALSE(next_client.check({"old job"}));
  next_client.set("new job", "2");
  CHECK(next.get("new job") == "2");
}

TEST_CASE("TcpStore: a malformed or oversized frame ends that connection and no other", "[bootstrap][store]") {
  TcpStore server("127.0.0.1", 0, true, kLong);
  const auto closed_after = [&](const std::string& bytes) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(server.port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool closed = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
      pollfd polled{fd, POLLIN, 0};
      char byte = 0;
      closed = ::poll(&polled, 1, 2000) == 1 && ::recv(fd, &byte, 1, 0) <= 0;
    }
    ::close(fd);
    return closed;
  };
  CHECK(closed_after(std::string("\xff\xff\xff\xff", 4)));            // 4 GiB announced
  CHECK(closed_after(std::string("\x04\x00\x00\x01", 4)));            // 64 MiB + 1
  CHECK(closed_after(std::string("\0\0\0\0", 4)));                    // empty
  CHECK(closed_after(std::string("\0\0\0\x01\x63", 5)));             // no such operation
  CHECK(closed_after(std::string("\0\0\0\x05\x02\0\0\x10\0", 9)));  // a key longer than the frame
  CHECK(closed_after(std::string("\0\0\0\x05\x04\xff\xff\xff\xff", 9)));  // 4 billion keys to check
  TcpStore client("127.0.0.1", server.port(), false, kLong);
  const Error error = error_of([&] { client.set("big", std::string(64 << 20, 'x')); });  // with its key: over 64 MiB
  CHECK(error.code() == ErrorCode::invalid_argument);
  CHECK(contains(error.what(), "'big'"));
  CHECK(contains(error.what(), "limit of 67108864 bytes"));
  client.set("still", "serving");  // the refused request was never sent
  CHECK(server.get("still") == "serving");
}

namespace {
const char* const kAddressVariables[] = {"CHORUS_STORE", "MASTER_ADDR", "MASTER_PORT", "CHORUS_TIMEOUT_MS"};

// A clean store environment for one test, whatever launched the test program; the old one comes back after.
struct Environment {
  std::vector<std::pair<const char*, std::optional<std::string>>> saved;
  explicit Environment(std::initializer_list<std::pair<const char*, std::string>> values) {
    for (const char* name : kAddressVariables) {
      const char* value = std::getenv(name);
      saved.emplace_back(name, value != nullptr ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
    for (const auto& v : values) ::setenv(v.first, v.second.c_str(), 1);
  }
  ~Environment() {
    for (const auto& [name, value] : saved) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }
};

chorus::bootstrap::LaunchInfo rank(int r) {
  chorus::bootstrap::LaunchInfo info;
  info.rank = r;
  info.size = 2;
  return info;
}
}  // namespace

TEST_CASE("parse_store_address reads tcp:// and file:// addresses", "[bootstrap][store]") {
  using chorus::bootstrap::parse_store_address;
  using Kind = chorus::bootstrap::StoreAddress::Kind;
  auto address = parse_store_address("tcp://127.0.0.1:29500");
  CHECK(address.kind == Kind::tcp);
  CHECK(address.host == "127.0.0.1");
  CHECK(address.port == 29500);
  address = parse_store_address("tcp://node-3.cluster:1");
  CHECK(address.host == "node-3.cluster");
  CHECK(address.port == 1);
  address = parse_store_address("file:///scratch/job 42");
  CHECK(address.kind == Kind::file);
  CHECK(address.directory == "/scratch/job 42");
}

TEST_CASE("parse_store_address refuses a malformed address, naming the variable", "[bootstrap][store]") {
  for (const char* text : {"", "tcp://", "tcp://host", "tcp://:80", "tcp://host:", "tcp://host:0", "tcp://host:65536",
                           "tcp://host:99999999999999999999", "tcp://host:80x", "tcp://host: 80", "tcp://[::1]:80",
                           "tcp://user@host:80", "udp://host:80", "host:80", "file://relative/dir", "file://"}) {
    INFO(text);
    const Error error = error_of([&] { chorus::bootstrap::parse_store_address(text, "MY_VARIABLE"); });
    CHECK(error.code() == ErrorCode::invalid_argument);
    CHECK(contains(error.what(), std::string("MY_VARIABLE='") + text + "'"));
  }
}

TEST_CASE("store_from_environment: a missing or malformed variable is named", "[bootstrap][store]") {
  using chorus::bootstrap::store_from_environment;
  const auto message = [](std::initializer_list<std::pair<const char*, std::string>> values) {
    Environment environment(values);
    const Error error = error_of([] { store_from_environment(rank(1), kShort); });
    CHECK(error.code() == ErrorCode::invalid_argument);
    return std::string(error.what());
  };
  CHECK(contains(message({}), "set CHORUS_STORE"));
  CHECK(contains(message({{"CHORUS_STORE", "tcp://host"}}), "CHORUS_STORE='tcp://host'"));
  CHECK(contains(message({{"MASTER_ADDR", "host"}}), "MASTER_PORT is not"));
  CHECK(contains(message({{"MASTER_PORT", "29500"}}), "MASTER_ADDR is not"));
  CHECK(contains(message({{"MASTER_ADDR", "host"}, {"MASTER_PORT", "70000"}}), "MASTER_PORT='70000'"));
  CHECK(contains(message({{"MASTER_ADDR", "host"}, {"MASTER_PORT", "-1"}}), "MASTER_PORT='-1'"));
  CHECK(contains(message({{"MASTER_ADDR", "host:1"}, {"MASTER_PORT", "1"}}), "MASTER_ADDR='host:1'"));
  CHECK(contains(message({{"MASTER_ADDR", "host"}, {"MASTER_PORT", "0"}}), "on rank 1: MASTER_PORT='0'"));
}

TEST_CASE("store_from_environment: the store the variables name", "[bootstrap][store]") {
  using chorus::bootstrap::store_from_environment;
  SECTION("CHORUS_STORE=file://, which wins over MASTER_ADDR and MASTER_PORT; CHORUS_TIMEOUT_MS") {
    TemporaryDirectory directory;
    Environment environment({{"CHORUS_STORE", "file://" + directory.path}, {"MASTER_ADDR", "nowhere.invalid"},
                             {"MASTER_PORT", "1"}, {"CHORUS_TIMEOUT_MS", "1234"}});
    auto one = store_from_environment(rank(0));
    auto two = store_from_environment(rank(1));
    CHECK(dynamic_cast<FileStore*>(one.get()) != nullptr);
    CHECK(one->timeout() == milliseconds(1234));
    one->set("k", "v");
    CHECK(two->get("k") == "v");
  }
  SECTION("CHORUS_STORE=tcp:// and MASTER_ADDR with MASTER_PORT: rank 0 serves") {
    int port = 0;
    {
      UnservedPort reserved;
      port = reserved.port;
    }
    const bool torchrun = GENERATE(false, true);
    Environment environment(torchrun ? std::initializer_list<std::pair<const char*, std::string>>{
                                           {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}}
                                     : std::initializer_list<std::pair<const char*, std::string>>{
                                           {"CHORUS_STORE", "tcp://localhost:" + std::to_string(port)}});
    auto server = store_from_environment(rank(0), kLong);
    auto client = store_from_environment(rank(1), kLong);
    REQUIRE(dynamic_cast<TcpStore*>(server.get()) != nullptr);
    CHECK(dynamic_cast<TcpStore*>(server.get())->port() == port);
    client->set("k", "v");
    CHECK(server->get("k") == "v");
  }
}

}  // namespace test_store
