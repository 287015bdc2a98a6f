// Peer access between the GPUs, from the CUDA runtime: which pairs can map each other's memory,
// their P2P performance rank and whether native atomics work across the link. Only a CUDA build
// (CHORUS_HAS_CUDA) with the runtime headers gets this; everywhere else the header is empty, so
// the CPU tier never needs CUDA. Include it from the cuda tier or a tool built with CUDA.
// Header-only in compiled mode too (plain `inline`, not CHORUS_FUNC): libchorus is built without CUDA.
#pragma once

#include "../core/config.hpp"

#if CHORUS_HAS_CUDA && defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#define CHORUS_TOPO_HAS_CUDA_READER 1
#endif
#endif

#if defined(CHORUS_TOPO_HAS_CUDA_READER)
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "busid.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

struct CudaPeers {
  bool available = false;
  std::string reason;                   // why not, when unavailable
  std::vector<std::string> busids;      // per CUDA device, normalised
  std::vector<int> sm;                  // per CUDA device
  std::vector<std::vector<int>> access; // access[a][b]: a can map b's memory
  std::vector<std::vector<int>> rank;   // P2P performance rank (lower is better), -1 unknown
  std::vector<std::vector<int>> atomics;
};

// Queries the runtime; no device (or no driver) means `available == false`, not an error.
inline CudaPeers read_cuda_peers() {
  CudaPeers peers;
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess || count == 0) {
    peers.reason = rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device";
    return peers;
  }
  const std::size_t n = static_cast<std::size_t>(count);
  peers.access.assign(n, std::vector<int>(n, 0));
  peers.rank.assign(n, std::vector<int>(n, -1));
  peers.atomics.assign(n, std::vector<int>(n, 0));
  for (int d = 0; d < count; ++d) {
    char busid[32] = {};
    cudaDeviceGetPCIBusId(busid, sizeof busid, d);
    peers.busids.push_back(normalize_busid(busid).value_or(""));
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d);
    peers.sm.push_back(major * 10 + minor);
  }
  for (int a = 0; a < count; ++a) {
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      int value = 0;
      if (cudaDeviceCanAccessPeer(&value, a, b) == cudaSuccess) peers.access[a][b] = value;
      if (cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrPerformanceRank, a, b) == cudaSuccess) {
        peers.rank[a][b] = value;
      }
      if (cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrNativeAtomicSupported, a, b) == cudaSuccess) {
        peers.atomics[a][b] = value;
      }
    }
  }
  peers.available = true;
  return peers;
}

// Fills in GPU generations the topology lacks (matched by bus id).
inline void apply_cuda(Topology& topo, const CudaPeers& peers) {
  for (std::size_t d = 0; d < peers.busids.size(); ++d) {
    const int node = topo.find_busid(peers.busids[d]);
    if (node >= 0 && topo.nodes[node].kind == NodeKind::gpu && topo.nodes[node].sm == 0) {
      topo.nodes[node].sm = peers.sm[d];
    }
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
#endif
