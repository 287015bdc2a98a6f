// NVTX ranges around nccl::Comm's calls, as a profiler sees them: an NVTX tool linked into this program
// (tests/trace/nvtx_recorder.cpp) records every range pushed and popped, while nccl::Comm runs over the
// scripted fake of NCCL (fake_library.hpp). Each call that passes its checks is one range, named like
// NCCL's own with "nccl" as the algorithm (NCCL chooses it), typed and erased overloads alike; a call
// refused before NCCL opens none; a call NCCL fails still closes its range.
#include <catch2/catch.hpp>

#include <chorus/nccl.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_library.hpp"
#include "trace/nvtx_recorder.hpp"

namespace test_nccl_nvtx {

using chorus::DataType;
using chorus::ReduceOp;
using Comm = chorus::nccl::BasicComm<fake::Library>;
using Group = chorus::nccl::BasicGroup<fake::Library>;
using Events = std::vector<std::string>;

namespace {
cudaStream_t stream_a() { return reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5a}); }

// A communicator of `size` ranks on which this is `rank`; the ranges recorded so far are dropped.
Comm made(int rank, int size, fake::Script script = fake::Script()) {
  fake::reset(script);
  Comm comm = Comm::init_rank(size, Comm::unique_id(), rank);
  nvtx_recorder::take();
  return comm;
}

Events range(const std::string& name) { return {"push " + name, "pop"}; }

Events joined(std::initializer_list<Events> parts) {
  Events out;
  for (const Events& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}
}  // namespace

TEST_CASE("this program's NVTX calls reach the recording tool", "[nccl][nvtx]") {
  static_assert(CHORUS_HAS_NVTX == 1, "the NCCL build has the CUDA Toolkit, so NVTX3 ranges are compiled in");
  Comm comm = made(0, 2);
  std::vector<float> a(4);
  comm.on(stream_a()).all_reduce(a.data(), a.data(), 4, ReduceOp::sum);
  CHECK(nvtx_recorder::attached());
  CHECK(nvtx_recorder::take() == range("chorus::all_reduce 16 B float32 sum nccl"));
}

TEST_CASE("every call of the view is one range named for the call, with nccl as the algorithm", "[nccl][nvtx]") {
  Comm comm = made(1, 4);
  auto view = comm.on(stream_a());
  std::vector<float> a(64), b(64);
  std::vector<__half> h(8);
  std::vector<std::int64_t> p(3);
  std::vector<std::int32_t> to_all(16), from_all(16);

  view.all_reduce(a.data(), b.data(), 10, ReduceOp::avg);
  view.all_reduce(a.data(), a.data(), 10, DataType::bfloat16, ReduceOp::max);  // type-erased
  view.reduce(h.data(), nullptr, 8, ReduceOp::prod, 0);
  view.broadcast(nullptr, b.data(), 5, 3);
  view.broadcast(b.data(), b.data(), 5, DataType::float32, 1);  // erased, this rank is the root
  view.all_gather(b.data() + 1 * 6, b.data(), 6);
  view.all_gather(b.data() + 1 * 6, b.data(), 6, DataType::int32);
  view.reduce_scatter(a.data(), a.data() + 1 * 7, 7, ReduceOp::min);
  view.reduce_scatter(a.data(), a.data() + 1 * 7, 7, DataType::uint32, ReduceOp::sum);
  view.reduce(a.data(), b.data(), 3, DataType::float64, ReduceOp::sum, 2);
  view.all_to_all(to_all.data(), from_all.data(), 4);
  view.all_to_all(to_all.data(), from_all.data(), 2, DataType::float16);
  view.send(p.data(), 3, 2);
  view.recv(p.data(), 3, DataType::uint64, 0);
  view.barrier();
  view.all_reduce(a.data(), b.data(), 0, ReduceOp::sum);  // nothing reaches NCCL, but the call happened
  CHECK(nvtx_recorder::take() == joined({
                                     range("chorus::all_reduce 40 B float32 avg nccl"),
                                     range("chorus::all_reduce 20 B bfloat16 max nccl"),
                                     range("chorus::reduce 16 B float16 prod root 0 nccl"),
                                     range("chorus::broadcast 20 B float32 root 3 nccl"),
                                     range("chorus::broadcast 20 B float32 root 1 nccl"),
                                     range("chorus::all_gather 24 B float32 nccl"),
                                     range("chorus::all_gather 24 B int32 nccl"),
                                     range("chorus::reduce_scatter 28 B float32 min nccl"),
                                     range("chorus::reduce_scatter 28 B uint32 sum nccl"),
                                     range("chorus::reduce 24 B float64 sum root 2 nccl"),
                                     range("chorus::all_to_all 16 B int32 nccl"),
                                     range("chorus::all_to_all 4 B float16 nccl"),
                                     range("chorus::send 24 B int64 peer 2"),
                                     range("chorus::recv 24 B uint64 peer 0"),
                                     range("chorus::barrier"),
                                     range("chorus::all_reduce 0 B float32 sum nccl"),
                                 }));

  auto part = view.split(1, 0);
  CHECK(nvtx_recorder::take() == range("chorus::split"));
}

TEST_CASE("sizes in range names read like NCCL's at scale", "[nccl][nvtx]") {
  Comm comm = made(0, 8);
  const std::size_t count = std::size_t{16} << 20;  // 64 MiB of floats; the fake never touches them
  std::unique_ptr<float[]> big(new float[count]);
  comm.on(stream_a()).all_reduce(big.get(), big.get(), count, ReduceOp::sum);
  comm.on(stream_a()).all_gather(big.get(), big.get(), count / 8 + 1000, DataType::uint8);
  CHECK(nvtx_recorder::take() == joined({range("chorus::all_reduce 64 MiB float32 sum nccl"),
                                         range("chorus::all_gather 2 MiB uint8 nccl")}));
}

TEST_CASE("a call refused before NCCL opens no range; one NCCL fails still closes it", "[nccl][nvtx]") {
  fake::Script script;
  script.fail["ncclBroadcast"] = ncclInvalidArgument;
  Comm comm = made(0, 2, script);
  auto view = comm.on(stream_a());
  std::vector<float> a(8);
  CHECK_THROWS(view.all_reduce(static_cast<const float*>(nullptr), a.data(), 8, ReduceOp::sum));
  CHECK_THROWS(view.send(a.data(), 8, 0));  // to itself
  CHECK_THROWS(view.all_reduce(a.data(), a.data(), 8, ReduceOp::sum, chorus::Algorithm::ring));
  CHECK(nvtx_recorder::take().empty());
  CHECK_THROWS_WITH(view.broadcast(a.data(), a.data(), 8, 0), Catch::Contains("ncclBroadcast failed"));
  CHECK(nvtx_recorder::take() == range("chorus::broadcast 32 B float32 root 0 nccl"));
}

TEST_CASE("inside a Group each member's call is its own range", "[nccl][nvtx]") {
  fake::reset();
  std::vector<Comm> comms = Comm::init_all({0, 1});
  nvtx_recorder::take();
  std::vector<double> a(8), b(8);
  {
    Group group;
    comms[0].on(stream_a()).all_reduce(a.data(), a.data(), 8, ReduceOp::sum);
    comms[1].on(stream_a()).all_reduce(b.data(), b.data(), 8, ReduceOp::sum);
    group.end();
  }
  CHECK(nvtx_recorder::take() == joined({range("chorus::all_reduce 64 B float64 sum nccl"),
                                         range("chorus::all_reduce 64 B float64 sum nccl")}));
}

}  // namespace test_nccl_nvtx
