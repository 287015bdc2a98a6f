// NVTX range names, and NvtxRange compiled both ways: this file is built once for the CPU tier
// (ranges compiled out) and, where the CUDA Toolkit's NVTX3 headers exist, once more with
// CHORUS_WITH_CUDA (real nvtxRangePushA/Pop), where an NVTX tool linked into the program
// (nvtx_recorder.cpp) sees exactly which ranges were pushed and popped.
#include <catch2/catch.hpp>

#include <chorus/runtime/nvtx_range.hpp>

#include <cstddef>
#include <string>
#include <vector>

#if CHORUS_HAS_NVTX
#include "trace/nvtx_recorder.hpp"
#endif

namespace test_nvtx_range {

namespace {

using chorus::runtime::CallDescriptor;
using chorus::runtime::CallKind;

CallDescriptor call_of(CallKind kind, chorus::DataType type, chorus::algo::Pattern pattern) {
  CallDescriptor call;
  call.kind = kind;
  call.type = type;
  call.pattern = pattern;
  return call;
}

}  // namespace

TEST_CASE("sizes read like NCCL's", "[nvtx]") {
  using chorus::runtime::human_bytes;
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(8) == "8 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1024) == "1 KiB");
  CHECK(human_bytes(1536) == "1.5 KiB");
  CHECK(human_bytes(std::size_t{64} << 20) == "64 MiB");
  CHECK(human_bytes((std::size_t{3} << 30) + (std::size_t{1} << 29)) == "3.5 GiB");
  CHECK(human_bytes(std::size_t{5} << 50) == "5120 TiB");
}

TEST_CASE("range names say collective, size, type, op or root, and algorithm", "[nvtx]") {
  using chorus::runtime::nvtx_range_name;
  CallDescriptor all_reduce = call_of(CallKind::all_reduce, chorus::DataType::float32, chorus::algo::Pattern::ring);
  all_reduce.count = std::size_t{16} << 20;
  CHECK(nvtx_range_name(all_reduce, std::size_t{64} << 20) == "chorus::all_reduce 64 MiB float32 sum ring");
  CallDescriptor broadcast = call_of(CallKind::broadcast, chorus::DataType::bfloat16, chorus::algo::Pattern::chain);
  broadcast.root = 3;
  CHECK(nvtx_range_name(broadcast, 2048) == "chorus::broadcast 2 KiB bfloat16 root 3 chain");
  CHECK(nvtx_range_name(call_of(CallKind::barrier, chorus::DataType::uint8, chorus::algo::Pattern::ring), 0) ==
        "chorus::barrier");
}

TEST_CASE("a backend that chose the algorithm itself names it", "[nvtx]") {
  using chorus::runtime::nvtx_range_name;
  CallDescriptor reduce = call_of(CallKind::reduce, chorus::DataType::float16, chorus::algo::Pattern::ring);
  reduce.op = chorus::ReduceOp::max;
  reduce.root = 1;
  CHECK(nvtx_range_name(reduce, 1536, "nccl") == "chorus::reduce 1.5 KiB float16 max root 1 nccl");
  CHECK(nvtx_range_name(call_of(CallKind::all_reduce, chorus::DataType::float32, chorus::algo::Pattern::ring), 4 << 20,
                        "two_shot") == "chorus::all_reduce 4 MiB float32 sum two_shot");
  CHECK(chorus::runtime::nvtx_peer_range_name("recv", 24, chorus::DataType::uint64, 0) == "chorus::recv 24 B uint64 peer 0");
}

TEST_CASE("an NvtxRange nests and pops on every path", "[nvtx]") {
  const CallDescriptor call = call_of(CallKind::all_gather, chorus::DataType::int32, chorus::algo::Pattern::direct);
#if CHORUS_HAS_NVTX
  nvtx_recorder::take();
#endif
  {
    chorus::runtime::NvtxRange outer(call, 4096);
    chorus::runtime::NvtxRange inner(call, 8, "one_shot");
    chorus::runtime::NvtxRange peer("send", 2, chorus::DataType::uint8, 5);
  }
#if defined(CHORUS_WITH_CUDA)
  CHECK(CHORUS_HAS_NVTX == 1);
#else
  CHECK(CHORUS_HAS_NVTX == 0);
#endif
#if CHORUS_HAS_NVTX
  CHECK(nvtx_recorder::attached());
  CHECK(nvtx_recorder::take() == std::vector<std::string>{"push chorus::all_gather 4 KiB int32 direct",
                                                          "push chorus::all_gather 8 B int32 one_shot",
                                                          "push chorus::send 2 B uint8 peer 5", "pop", "pop", "pop"});
#endif
}

}  // namespace test_nvtx_range
