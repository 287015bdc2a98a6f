// call_collective routes to the right Comm member with the right arguments; the in-place layout
// matches the documented aliasing; timing makes the calls it promises between barriers.
#include <catch2/catch.hpp>
#include <chorus/bench/call.hpp>
#include <chorus/bench/timing.hpp>

#include <string>

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::algo::Collective;
using namespace chorus::bench;

namespace {

// Records the last call instead of communicating.
struct FakeComm {
  std::string last;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  ReduceOp op = ReduceOp::sum;
  int root = -1;
  Algorithm algorithm = Algorithm::automatic;
  int barriers = 0;

  template <class T>
  void record(const char* name, const T* s, T* r, std::size_t c) {
    last = name;
    send = s;
    recv = r;
    count = c;
  }
  template <class T>
  void all_reduce(const T* s, T* r, std::size_t c, ReduceOp o, Algorithm a) {
    record("all_reduce", s, r, c);
    op = o;
    algorithm = a;
  }
  template <class T>
  void reduce_scatter(const T* s, T* r, std::size_t c, ReduceOp o) {
    record("reduce_scatter", s, r, c);
    op = o;
  }
  template <class T>
  void all_gather(const T* s, T* r, std::size_t c) {
    record("all_gather", s, r, c);
  }
  template <class T>
  void broadcast(const T* s, T* r, std::size_t c, int root_rank) {
    record("broadcast", s, r, c);
    root = root_rank;
  }
  template <class T>
  void reduce(const T* s, T* r, std::size_t c, ReduceOp o, int root_rank) {
    record("reduce", s, r, c);
    op = o;
    root = root_rank;
  }
  template <class T>
  void all_to_all(const T* s, T* r, std::size_t c) {
    record("all_to_all", s, r, c);
  }
  void barrier() { ++barriers; }
};

}  // namespace

TEST_CASE("call_collective forwards to the named member") {
  FakeComm comm;
  float a[4] = {}, b[4] = {};
  call_collective(comm, Collective::all_reduce, a, b, 4, ReduceOp::max, 0, Algorithm::tree);
  CHECK(comm.last == "all_reduce");
  CHECK(comm.send == a);
  CHECK(comm.recv == b);
  CHECK(comm.count == 4);
  CHECK(comm.op == ReduceOp::max);
  CHECK(comm.algorithm == Algorithm::tree);
  call_collective(comm, Collective::reduce, a, b, 3, ReduceOp::min, 2, Algorithm::ring);
  CHECK(comm.last == "reduce");
  CHECK(comm.root == 2);
  CHECK(comm.op == ReduceOp::min);
  call_collective(comm, Collective::broadcast, a, b, 2, ReduceOp::sum, 1, Algorithm::automatic);
  CHECK(comm.last == "broadcast");
  CHECK(comm.root == 1);
  call_collective(comm, Collective::reduce_scatter, a, b, 1, ReduceOp::prod, 0, Algorithm::automatic);
  CHECK(comm.last == "reduce_scatter");
  CHECK(comm.op == ReduceOp::prod);
  call_collective(comm, Collective::all_gather, a, b, 1, ReduceOp::sum, 0, Algorithm::automatic);
  CHECK(comm.last == "all_gather");
  call_collective(comm, Collective::all_to_all, a, b, 1, ReduceOp::sum, 0, Algorithm::automatic);
  CHECK(comm.last == "all_to_all");
  CHECK(comm.count == 1);
}

TEST_CASE("in-place layout follows NCCL's aliasing") {
  const InPlaceLayout ag = in_place_layout(Collective::all_gather, 2, 4, 5);
  CHECK(ag.buffer_count == 20);
  CHECK(ag.send_offset == 10);
  CHECK(ag.recv_offset == 0);
  const InPlaceLayout rs = in_place_layout(Collective::reduce_scatter, 3, 4, 5);
  CHECK(rs.buffer_count == 20);
  CHECK(rs.send_offset == 0);
  CHECK(rs.recv_offset == 15);
  const InPlaceLayout a2a = in_place_layout(Collective::all_to_all, 1, 4, 5);
  CHECK(a2a.buffer_count == 20);
  CHECK(a2a.send_offset == a2a.recv_offset);
  for (auto c : {Collective::all_reduce, Collective::broadcast, Collective::reduce}) {
    const InPlaceLayout l = in_place_layout(c, 3, 4, 5);
    CHECK(l.buffer_count == 5);
    CHECK(l.send_offset == 0);
    CHECK(l.recv_offset == 0);
  }
  CHECK(in_place_layout(Collective::all_gather, 0, 1, 0).buffer_count == 0);
}

TEST_CASE("seconds_per_call runs warmup + iters calls with barriers around the timed loop") {
  FakeComm comm;
  int calls = 0;
  const double seconds = seconds_per_call(comm, 3, 7, [&] { ++calls; });
  CHECK(calls == 10);
  CHECK(comm.barriers == 2);
  CHECK(seconds >= 0.0);
  CHECK(seconds < 1.0);
  CHECK_THROWS_AS(seconds_per_call(comm, 0, 0, [] {}), chorus::Error);
  CHECK_THROWS_AS(seconds_per_call(comm, -1, 1, [] {}), chorus::Error);
}
