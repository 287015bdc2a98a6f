// Which store a job meets in, from its environment, so the same binary runs under every launcher:
//
//   CHORUS_STORE=tcp://HOST:PORT       a TcpStore at HOST:PORT, served by rank 0
//   CHORUS_STORE=file:///ABSOLUTE/DIR  a FileStore in that directory
//   MASTER_ADDR=HOST MASTER_PORT=PORT  torchrun's variables (and any launcher that copies them): a TcpStore
//                                      served by rank 0
//
// CHORUS_STORE wins where both are set. Hosts are IPv4 addresses or names (resolved by getaddrinfo); a malformed
// address, a port outside 1..65535 or no address at all is chorus::Error(invalid_argument) naming the variable and
// its value, at once rather than after a timeout.
//
//   const auto info = chorus::bootstrap::launch_info();
//   std::unique_ptr<chorus::bootstrap::Store> store = chorus::bootstrap::store_from_environment(info);
#pragma once

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "file_store.hpp"
#include "launch_env.hpp"
#include "store.hpp"
#include "tcp_store.hpp"

CHORUS_NAMESPACE_BEGIN namespace bootstrap {

struct StoreAddress {
  enum class Kind { tcp, file };
  Kind kind = Kind::tcp;
  std::string host;       // tcp
  int port = 0;           // tcp: 1..65535
  std::string directory;  // file: absolute
};

namespace detail {

inline Error bad_address(const std::string& call, const char* variable, std::string_view value, const char* why) {
  return Error(ErrorCode::invalid_argument,
               chorus::detail::concat(call, ": ", variable, "='", value, "' ", why));
}

// "1".."65535", digits only: strtol would take " 80" or "80x".
inline int parse_port(std::string_view text, const std::string& call, const char* variable, std::string_view value) {
  long port = 0;
  for (const char c : text) {
    if (c < '0' || c > '9' || port > 65535) {
      throw bad_address(call, variable, value, "does not give a port from 1 to 65535");
    }
    port = port * 10 + (c - '0');
  }
  if (text.empty() || port < 1 || port > 65535) {
    throw bad_address(call, variable, value, "does not give a port from 1 to 65535");
  }
  return static_cast<int>(port);
}

inline StoreAddress parse_store_address(std::string_view text, const char* variable, const std::string& call) {
  constexpr std::string_view kTcp = "tcp://", kFile = "file://";
  StoreAddress address;
  if (text.substr(0, kFile.size()) == kFile) {
    address.kind = StoreAddress::Kind::file;
    address.directory = std::string(text.substr(kFile.size()));
    if (address.directory.empty() || address.directory[0] != '/') {
      throw bad_address(call, variable, text, "is not file:///ABSOLUTE/DIRECTORY (three slashes: the path is absolute)");
    }
    return address;
  }
  if (text.substr(0, kTcp.size()) != kTcp) {
    throw bad_address(call, variable, text, "is neither tcp://HOST:PORT nor file:///ABSOLUTE/DIRECTORY");
  }
  const std::string_view rest = text.substr(kTcp.size());
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    throw bad_address(call, variable, text, "is not tcp://HOST:PORT (the host or the port is missing)");
  }
  const std::string_view host = rest.substr(0, colon);
  if (host.find_first_of(":/[]@ ") != std::string_view::npos) {
    throw bad_address(call, variable, text, "is not tcp://HOST:PORT with an IPv4 address or a host name");
  }
  address.host = std::string(host);
  address.port = parse_port(rest.substr(colon + 1), call, variable, text);
  return address;
}

}  // namespace detail

// `text` as a store address; `variable` is the name the error gives it.
inline StoreAddress parse_store_address(std::string_view text, const char* variable = "CHORUS_STORE") {
  return detail::parse_store_address(text, variable, "chorus::bootstrap::parse_store_address");
}

// The job's store, as the environment names it (see the top of this file). Rank 0 (info.rank) serves a TCP
// store; every other rank connects to it, retrying until `timeout`.
inline std::unique_ptr<Store> store_from_environment(
    const LaunchInfo& info = launch_info(),
    std::chrono::milliseconds timeout = std::chrono::milliseconds(env::timeout_ms())) {
  const std::string call = chorus::detail::concat("chorus::bootstrap::store_from_environment on rank ", info.rank);
  StoreAddress address;
  const char* store = std::getenv("CHORUS_STORE");
  if (store != nullptr && *store != '\0') {
    address = detail::parse_store_address(store, "CHORUS_STORE", call);
  } else {
    const char* host = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    const bool has_host = host != nullptr && *host != '\0', has_port = port != nullptr && *port != '\0';
    if (!has_host && !has_port) {
      throw Error(ErrorCode::invalid_argument,
                  call + ": no store address: set CHORUS_STORE=tcp://HOST:PORT or file:///ABSOLUTE/DIRECTORY, or "
                         "MASTER_ADDR and MASTER_PORT (torchrun sets them)");
    }
    if (!has_host || !has_port) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat(call, ": ", has_host ? "MASTER_ADDR='" : "MASTER_PORT='",
                                         has_host ? host : port, "' is set but ",
                                         has_host ? "MASTER_PORT" : "MASTER_ADDR", " is not: set both"));
    }
    address.host = host;
    if (address.host.find_first_of(":/[]@ ") != std::string::npos) {
      throw detail::bad_address(call, "MASTER_ADDR", host, "is not an IPv4 address or a host name");
    }
    address.port = detail::parse_port(port, call, "MASTER_PORT", port);
  }
  if (address.kind == StoreAddress::Kind::file) return std::make_unique<FileStore>(address.directory, timeout);
  return std::make_unique<TcpStore>(address.host, address.port, info.rank == 0, timeout);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bootstrap
