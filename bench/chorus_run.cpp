// chorus-run: N processes of one program on this machine, each told its rank and where the job's store
// is, as torchrun tells them (docs/chorus-run.md).
//
//   chorus-run -n N [--label] [--grace SECONDS] [--port PORT] [--] PROGRAM [ARGS...]
#include <CLI/CLI.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <chorus/core/config.hpp>

#include "run_job.hpp"

namespace {

constexpr const char* kUsage = "chorus-run -n N [--label] [--grace SECONDS] [--port PORT] [--] PROGRAM [ARGS...]";

// Where chorus-run's own arguments end and PROGRAM begins: at "--", or at the first argument that is
// neither an option nor an option's value. PROGRAM's own flags (sh -c, python -u) are never chorus-run's.
int program_start(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--" || arg.empty() || arg[0] != '-' || arg == "-") return i;
    const std::string name = arg.substr(0, arg.find('='));
    const CLI::Option* option = app.get_option_no_throw(name);
    const bool value_attached = arg.find('=') != std::string::npos || (arg[1] != '-' && arg.size() > 2);
    if (option != nullptr && option->get_items_expected_min() > 0 && !value_attached) ++i;
  }
  return argc;
}

// A port on 127.0.0.1 that is free now: the kernel picks it for a socket bound to port 0. Rank 0 binds it
// again a moment later; another process could take it in between, and the store then says so.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(std::string("cannot find a free TCP port on 127.0.0.1: ") + std::strerror(error));
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// What every rank's environment gains: torchrun's variables, MASTER_ADDR/MASTER_PORT included, and
// CHORUS_STORE at the same address unless the user set one (a program that serves torch's store at
// MASTER_PORT and opens chorus's from the environment as well needs the two apart).
chorus_run::RankEnvironment rank_environment(int rank, int ranks, int port, bool store_given) {
  const std::string n = std::to_string(ranks), r = std::to_string(rank);
  chorus_run::RankEnvironment env;
  env.set = {{"RANK", r}, {"WORLD_SIZE", n}, {"LOCAL_RANK", r}, {"LOCAL_WORLD_SIZE", n}};
  env.set.push_back({"MASTER_ADDR", "127.0.0.1"});
  env.set.push_back({"MASTER_PORT", std::to_string(port)});
  if (!store_given) env.set.push_back({"CHORUS_STORE", "tcp://127.0.0.1:" + std::to_string(port)});
  // chorus::bootstrap::launch_info() reads Open MPI's variables before torchrun's: inherited from an
  // mpirun around chorus-run, they would give every rank the same rank.
  env.unset = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
               "OMPI_COMM_WORLD_LOCAL_SIZE"};
  return env;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-run: N processes of PROGRAM on this machine, each with RANK, WORLD_SIZE, LOCAL_RANK, "
               "LOCAL_WORLD_SIZE and the store's address set (docs/chorus-run.md)\n  " + std::string(kUsage)};
  app.set_version_flag("--version", CHORUS_VERSION_STRING);
  int ranks = 0, port = 0;
  double grace = 5.0;
  bool label = false;
  app.add_option("-n", ranks, "processes to start (ranks 0 to N-1)")->required()->check(CLI::Range(1, 1 << 16));
  app.add_flag("--label", label, "prefix every line a rank writes with '[rank] '");
  app.add_option("--grace", grace, "seconds between SIGTERM and SIGKILL when the job is ended")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--port", port, "MASTER_PORT and the store's port on 127.0.0.1 (default: a free one)")->check(CLI::Range(1, 65535));
  const int first = program_start(app, argc, argv);
  try {
    app.parse(first, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-run: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  const int program = first + (first < argc && std::string(argv[first]) == "--");
  if (program == argc) {
    std::fprintf(stderr, "chorus-run: error: no PROGRAM given\nUsage: %s\n", kUsage);
    return 2;
  }
  const std::vector<std::string> command(argv + program, argv + argc);

  const char* user_store = std::getenv("CHORUS_STORE");
  const bool store_given = user_store != nullptr && *user_store != '\0';
  try {
    if (port == 0) port = free_port();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-run: error: %s\n", e.what());
    return 1;
  }
  chorus_run::Job job(command, label, std::chrono::duration_cast<chorus_run::Clock::duration>(
                                          std::chrono::duration<double>(grace)));
  for (int rank = 0; rank < ranks; ++rank) {
    try {
      job.start(rank, rank_environment(rank, ranks, port, store_given));
    } catch (const chorus_run::LaunchError& e) {
      std::fprintf(stderr, "chorus-run: error: %s\n", e.what());
      job.end(e.status);
      break;
    }
  }
  return job.wait();
}
