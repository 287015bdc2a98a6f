// NCCL's three GPU protocols and what NCCL's tuner charges for each (src/graph/tuning.cc of
// NVIDIA/nccl v2.30.7-1; docs/references.md lists every source):
//
//   LL     16 B lines of 8 B data + 8 B flag: half the bandwidth, the lowest latency
//   LL128  128 B lines of 120 B data + 8 B flag: ~94% of the bandwidth (the tuner uses 0.92)
//   Simple data + a step counter behind a memory fence: all the bandwidth, the highest latency
//
// Latencies are in microseconds, [LL, LL128, Simple]. NCCL charges a base latency once per call
// and a hop latency per sequential step of the algorithm, by the kind of link the step crosses.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

enum class Protocol { ll, ll128, simple };

inline constexpr std::array<Protocol, 3> kProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};

inline const char* to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

inline std::optional<Protocol> parse_protocol(std::string_view name) {
  for (Protocol p : kProtocols) {
    if (name == to_string(p)) return p;
  }
  return std::nullopt;
}

// NCCL prices ring-like and tree-like algorithms with different tables; chorus's other patterns
// take the ring's (they are sequences of point-to-point steps like it).
enum class LatencyTable { ring, tree };

// What a step costs by the class of path it crosses (NCCL's hwLat rows).
enum class HopClass { nvlink, pcie, network };

inline double base_latency_us(LatencyTable table, Protocol protocol) {
  // Tree 6.8/14/8.4, Ring 6.6/14/8.4.
  static constexpr double ring[] = {6.6, 14.0, 8.4};
  static constexpr double tree[] = {6.8, 14.0, 8.4};
  return (table == LatencyTable::ring ? ring : tree)[static_cast<int>(protocol)];
}

inline double hop_latency_us(LatencyTable table, HopClass hop, Protocol protocol) {
  //                                 LL    LL128  Simple
  static constexpr double ring[3][3] = {{0.6, 1.9, 3.4},    // NVLink
                                        {1.0, 2.5, 5.7},    // PCIe
                                        {2.7, 4.0, 14.0}};  // network
  static constexpr double tree[3][3] = {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
  const auto& rows = table == LatencyTable::ring ? ring : tree;
  return rows[static_cast<int>(hop)][static_cast<int>(protocol)];
}

// The share of a link's bandwidth that carries data: LL sends a flag with every 4-byte word,
// LL128 one 8-byte flag per 128-byte line (the tuner's 0.92), Simple only data.
inline double bandwidth_efficiency(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return 0.5;
    case Protocol::ll128: return 0.92;
    case Protocol::simple: return 1.0;
  }
  return 1.0;
}

// LL's ceiling on one node however fast the links (llMaxBw, GB/s): Volta 39, Ampere 87.7,
// Hopper 141, Blackwell 282. `sm` is major*10 + minor; 0 (unknown) takes Ampere's.
inline double ll_max_GBps(int sm) {
  if (sm >= 100) return 282.0;
  if (sm >= 90) return 141.0;
  if (sm >= 80 || sm == 0) return 87.7;
  return 39.0;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::model
