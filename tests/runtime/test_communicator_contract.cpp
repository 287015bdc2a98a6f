// The communicator contract as code: the backends and the test fake satisfy it, a type missing any
// one member does not, and check_communicator names what is missing (the compile-time message is
// checked by tests/consume/contract_rejects.sh).
#include <catch2/catch.hpp>

#include <chorus/core/communicator.hpp>
#include <chorus/host/comm.hpp>

#include "support/mailbox_comm.hpp"

#include <cstddef>

namespace test_communicator_contract {

using chorus::Algorithm;
using chorus::DataType;
using chorus::ReduceOp;

namespace {

// Declarations only: the trait looks at signatures, never calls. Everything but the type-erased
// reduce_scatter.
struct NoErasedReduceScatter {
  int rank() const;
  int size() const;
  template <class T> void all_reduce(const T*, T*, std::size_t, ReduceOp, Algorithm = Algorithm::automatic);
  template <class T> void broadcast(const T*, T*, std::size_t, int);
  template <class T> void reduce(const T*, T*, std::size_t, ReduceOp, int);
  template <class T> void all_gather(const T*, T*, std::size_t);
  template <class T> void reduce_scatter(const T*, T*, std::size_t, ReduceOp);
  template <class T> void all_to_all(const T*, T*, std::size_t);
  template <class T> void send(const T*, std::size_t, int);
  template <class T> void recv(T*, std::size_t, int);
  void all_reduce(const void*, void*, std::size_t, DataType, ReduceOp, Algorithm = Algorithm::automatic);
  void broadcast(const void*, void*, std::size_t, DataType, int);
  void reduce(const void*, void*, std::size_t, DataType, ReduceOp, int);
  void all_gather(const void*, void*, std::size_t, DataType);
  void all_to_all(const void*, void*, std::size_t, DataType);
  void send(const void*, std::size_t, DataType, int);
  void recv(void*, std::size_t, DataType, int);
  void barrier();
  void wait();
  NoErasedReduceScatter split(int, int);
};

// The whole contract: the above plus the missing member (and split returning this type).
struct Minimal : NoErasedReduceScatter {
  using NoErasedReduceScatter::reduce_scatter;
  void reduce_scatter(const void*, void*, std::size_t, DataType, ReduceOp);
  Minimal split(int, int);
};

// Everything but wait().
struct NoWait : Minimal {
  void wait() = delete;
  NoWait split(int, int);
};

// all_reduce without the optional Algorithm, and split returning the wrong type.
struct NoAlgorithm {
  int rank() const;
  int size() const;
  template <class T> void all_reduce(const T*, T*, std::size_t, ReduceOp);
  void barrier();
  int split(int, int);
};

}  // namespace

TEST_CASE("backends and the test fake satisfy the communicator contract", "[contract]") {
  STATIC_REQUIRE(chorus::is_communicator_v<chorus::host::Comm>);
  STATIC_REQUIRE(chorus::is_communicator_v<mailbox::Comm>);
  STATIC_REQUIRE(chorus::is_communicator_v<Minimal>);
  STATIC_REQUIRE(chorus::check_communicator<Minimal>());
}

TEST_CASE("a type missing any member is not a communicator, and the trait says which", "[contract]") {
  using R = chorus::contract::Requirements<NoErasedReduceScatter>;
  STATIC_REQUIRE_FALSE(chorus::is_communicator_v<NoErasedReduceScatter>);
  STATIC_REQUIRE(R::typed);
  STATIC_REQUIRE_FALSE(R::erased_reduce_scatter);
  STATIC_REQUIRE(R::erased_all_reduce);

  using S = chorus::contract::Requirements<NoAlgorithm>;
  STATIC_REQUIRE_FALSE(chorus::is_communicator_v<NoAlgorithm>);
  STATIC_REQUIRE(S::rank);
  STATIC_REQUIRE_FALSE(S::all_reduce);  // the Algorithm overload is part of the contract
  STATIC_REQUIRE_FALSE(S::split);       // split must return the communicator type
  STATIC_REQUIRE_FALSE(S::broadcast);
  STATIC_REQUIRE(S::barrier);

  using W = chorus::contract::Requirements<NoWait>;
  STATIC_REQUIRE_FALSE(chorus::is_communicator_v<NoWait>);
  STATIC_REQUIRE(W::typed);
  STATIC_REQUIRE(W::erased);
  STATIC_REQUIRE_FALSE(W::wait);  // completion is part of the contract

  STATIC_REQUIRE_FALSE(chorus::is_communicator_v<int>);
  STATIC_REQUIRE_FALSE(chorus::is_communicator_v<std::vector<float>>);
}

}  // namespace test_communicator_contract
