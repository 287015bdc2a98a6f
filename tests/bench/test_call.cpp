// call_collective routes to the right Comm member with the right arguments (the algorithm
// included); timing makes the calls it promises between barriers.
#include <catch2/catch.hpp>
#include <chorus/bench/call.hpp>
#include <chorus/bench/timing.hpp>

#include <string>

namespace test_call {

using chorus::Algorithm;
using chorus::ReduceOp;
using chorus::Collective;
using namespace chorus::bench;

namespace {

// Records the last call instead of communicating.
struct FakeComm {
  std::string last;
  const void* send_buffer = nullptr;
  void* recv_buffer = nullptr;
  std::size_t count = 0;
  ReduceOp op = ReduceOp::sum;
  int root = -1;
  Algorithm algorithm = Algorithm::automatic;
  int barriers = 0;

  template <class T>
  void record(const char* name, const T* s, T* r, std::size_t c) {
    last = name;
    send_buffer = s;
    recv_buffer = r;
    count = c;
  }
  // The rest of the contract, unused here.
  int rank() const { return 0; }
  int size() const { return 1; }
  template <class T> void send(const T*, std::size_t, int) {}
  template <class T> void recv(T*, std::size_t, int) {}
  void all_reduce(const void*, void*, std::size_t, chorus::DataType, ReduceOp, Algorithm = Algorithm::automatic) {}
  void broadcast(const void*, void*, std::size_t, chorus::DataType, int) {}
  void reduce(const void*, void*, std::size_t, chorus::DataType, ReduceOp, int) {}
  void all_gather(const void*, void*, std::size_t, chorus::DataType) {}
  void reduce_scatter(const void*, void*, std::size_t, chorus::DataType, ReduceOp) {}
  void all_to_all(const void*, void*, std::size_t, chorus::DataType) {}
  void send(const void*, std::size_t, chorus::DataType, int) {}
  void recv(void*, std::size_t, chorus::DataType, int) {}
  FakeComm split(int, int) { return {}; }
  void wait() {}

  template <class T>
  void all_reduce(const T* s, T* r, std::size_t c, ReduceOp o, Algorithm a = Algorithm::automatic) {
    record("all_reduce", s, r, c);
    op = o;
    algorithm = a;
  }
  template <class T>
  void reduce_scatter(const T* s, T* r, std::size_t c, ReduceOp o, Algorithm = Algorithm::automatic) {
    record("reduce_scatter", s, r, c);
    op = o;
  }
  template <class T>
  void all_gather(const T* s, T* r, std::size_t c, Algorithm = Algorithm::automatic) {
    record("all_gather", s, r, c);
  }
  template <class T>
  void broadcast(const T* s, T* r, std::size_t c, int root_rank, Algorithm a = Algorithm::automatic) {
    record("broadcast", s, r, c);
    root = root_rank;
    algorithm = a;
  }
  template <class T>
  void reduce(const T* s, T* r, std::size_t c, ReduceOp o, int root_rank, Algorithm = Algorithm::automatic) {
    record("reduce", s, r, c);
    op = o;
    root = root_rank;
  }
  template <class T>
  void all_to_all(const T* s, T* r, std::size_t c, Algorithm = Algorithm::automatic) {
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
  CHECK(comm.send_buffer == a);
  CHECK(comm.recv_buffer == b);
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

TEST_CASE("call_collective forwards a forced algorithm to every collective that takes one") {
  static_assert(chorus::is_communicator_v<FakeComm>);
  FakeComm comm;
  float a[4] = {}, b[4] = {};
  call_collective(comm, Collective::broadcast, a, b, 4, ReduceOp::sum, 1, Algorithm::chain);
  CHECK(comm.last == "broadcast");
  CHECK(comm.algorithm == Algorithm::chain);
  call_collective(comm, Collective::broadcast, a, b, 4, ReduceOp::sum, 1, Algorithm::automatic);
  CHECK(comm.algorithm == Algorithm::automatic);
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

}  // namespace test_call
