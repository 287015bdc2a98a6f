// An NVTX range around one collective call, named as NCCL names its ranges, e.g.
// "chorus::all_reduce 64 MiB float32 sum ring", so Nsight Systems shows chorus's calls on the CPU
// timeline beside the kernels they launch. Only a CUDA build (CHORUS_HAS_CUDA) that finds NVTX3
// (header-only, shipped with the CUDA Toolkit: include/nvtx3) gets real ranges; everywhere else
// NvtxRange is empty and builds no name, so the CPU tier never needs CUDA and pays nothing.
// The device backends use it: nccl::Comm's view (every collective, send, recv, barrier, split) and
// cuda::Team::all_reduce. The name carries the algorithm that actually runs: the kernel cuda::Team
// picked, or "nccl" where NCCL chooses inside the call.
#pragma once

#include <cstddef>
#include <string>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "call_descriptor.hpp"

#if CHORUS_HAS_CUDA && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#define CHORUS_HAS_NVTX 1
#include <nvtx3/nvToolsExt.h>
#endif
#endif
#if !defined(CHORUS_HAS_NVTX)
#define CHORUS_HAS_NVTX 0
#endif

CHORUS_NAMESPACE_BEGIN namespace runtime {

// "8 B", "1 KiB", "1.5 KiB", "64 MiB": the largest binary unit the size reaches, one decimal when inexact.
inline std::string human_bytes(std::size_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  std::size_t scale = 1;
  while (unit < 4 && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  const std::size_t whole = bytes / scale;
  const std::size_t tenths = (bytes % scale) * 10 / scale;
  return tenths == 0 ? chorus::detail::concat(whole, " ", kUnits[unit])
                     : chorus::detail::concat(whole, ".", tenths, " ", kUnits[unit]);
}

// "chorus::all_reduce 64 MiB float32 sum ring": the collective, the call's bytes (count x element
// size), the type, the op where it reduces, the root where it has one, and the algorithm that runs.
inline std::string nvtx_range_name(const CallDescriptor& call, std::size_t bytes, const char* algorithm) {
  if (!is_collective(call.kind)) return chorus::detail::concat("chorus::", to_string(call.kind));
  std::string name = chorus::detail::concat("chorus::", to_string(call.kind), " ", human_bytes(bytes), " ",
                                            chorus::to_string(call.type));
  if (traits(call.collective()).reduces) name += chorus::detail::concat(" ", chorus::to_string(call.op));
  if (traits(call.collective()).rooted) name += chorus::detail::concat(" root ", call.root);
  return name + " " + algorithm;
}

// The algorithm is the descriptor's schedule pattern (chorus's own backends).
inline std::string nvtx_range_name(const CallDescriptor& call, std::size_t bytes) {
  return nvtx_range_name(call, bytes, algo::to_string(call.pattern));
}

// "chorus::send 4 KiB int32 peer 3": point-to-point calls, named like the collectives.
inline std::string nvtx_peer_range_name(const char* call, std::size_t bytes, DataType type, int peer) {
  return chorus::detail::concat("chorus::", call, " ", human_bytes(bytes), " ", chorus::to_string(type), " peer ", peer);
}

// Pushes the range for the lifetime of the object (one thread: NVTX ranges nest per thread). Each
// constructor takes the parts of a name above and builds it only where ranges are compiled in.
class NvtxRange {
 public:
#if CHORUS_HAS_NVTX
  NvtxRange(const CallDescriptor& call, std::size_t bytes) { nvtxRangePushA(nvtx_range_name(call, bytes).c_str()); }
  NvtxRange(const CallDescriptor& call, std::size_t bytes, const char* algorithm) {
    nvtxRangePushA(nvtx_range_name(call, bytes, algorithm).c_str());
  }
  NvtxRange(const char* call, std::size_t bytes, DataType type, int peer) {
    nvtxRangePushA(nvtx_peer_range_name(call, bytes, type, peer).c_str());
  }
  ~NvtxRange() { nvtxRangePop(); }
#else
  NvtxRange(const CallDescriptor&, std::size_t) {}
  NvtxRange(const CallDescriptor&, std::size_t, const char*) {}
  NvtxRange(const char*, std::size_t, DataType, int) {}
#endif
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
