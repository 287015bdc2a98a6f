// The contract's memory space and completion: memory_space_v and completes_on_return_v on the host
// communicators, on fakes that declare device memory or their own completion, and through a wrapper
// that forwards them; wait() is part of the contract and refuses a null or moved-from communicator.
#include <catch2/catch.hpp>

#include <chorus/core/communicator.hpp>
#include <chorus/core/memory_space.hpp>
#include <chorus/host.hpp>
#include <chorus/runtime/collective_front.hpp>

#include "support/mailbox_comm.hpp"
#include "support/recording_comm.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace test_memory_space {

using chorus::completes_on_return_v;
using chorus::MemorySpace;
using chorus::memory_space_v;

namespace {

// Declarations only: the traits read members, never call.
template <class Self>
struct Declared : chorus::runtime::CollectiveFront<Self> {
  int rank() const;
  int size() const;
  using chorus::runtime::CollectiveFront<Self>::send;
  using chorus::runtime::CollectiveFront<Self>::recv;
  void send(const void*, std::size_t, chorus::DataType, int);
  void recv(void*, std::size_t, chorus::DataType, int);
  void barrier();
  void wait();
  Self split(int, int);
  template <class T> void typed_collective(const chorus::runtime::CollectiveArgs&);
  void erased_collective(const chorus::runtime::CollectiveArgs&);
};

struct DeviceComm : Declared<DeviceComm> {
  static constexpr MemorySpace memory_space = MemorySpace::device;
};
// Device memory, but every call synchronises before it returns.
struct BlockingDeviceComm : Declared<BlockingDeviceComm> {
  static constexpr MemorySpace memory_space = MemorySpace::device;
  static constexpr bool completes_on_return = true;
};
// Host memory, returning before the work is done (as a host backend with a progress thread would).
struct EarlyHostComm : Declared<EarlyHostComm> {
  static constexpr bool completes_on_return = false;
};
// A member that happens to be called memory_space but is no MemorySpace says nothing.
struct UnrelatedMember : Declared<UnrelatedMember> {
  static constexpr int memory_space = 1;
};

struct NoWait {
  int rank() const;
  int size() const;
};

}  // namespace

TEST_CASE("a communicator is host unless it declares device memory", "[memory_space]") {
  STATIC_REQUIRE(memory_space_v<chorus::host::Comm> == MemorySpace::host);
  STATIC_REQUIRE(memory_space_v<mailbox::Comm> == MemorySpace::host);
  STATIC_REQUIRE(memory_space_v<UnrelatedMember> == MemorySpace::host);
  STATIC_REQUIRE(memory_space_v<DeviceComm> == MemorySpace::device);
  STATIC_REQUIRE(memory_space_v<const DeviceComm&> == MemorySpace::device);  // as generic code may name it
  STATIC_REQUIRE(chorus::is_communicator_v<DeviceComm>);
  CHECK(std::string(chorus::to_string(MemorySpace::device)) == "device");
}

TEST_CASE("a call completes on return where the memory is host, unless the type says otherwise", "[memory_space]") {
  STATIC_REQUIRE(completes_on_return_v<chorus::host::Comm>);
  STATIC_REQUIRE(completes_on_return_v<mailbox::Comm>);
  STATIC_REQUIRE_FALSE(completes_on_return_v<DeviceComm>);
  STATIC_REQUIRE(completes_on_return_v<BlockingDeviceComm>);
  STATIC_REQUIRE_FALSE(completes_on_return_v<EarlyHostComm>);
  STATIC_REQUIRE(memory_space_v<EarlyHostComm> == MemorySpace::host);
}

TEST_CASE("a wrapping communicator has its inner one's memory and completion", "[memory_space]") {
  STATIC_REQUIRE(memory_space_v<support::RecordingComm<chorus::host::Comm>> == MemorySpace::host);
  STATIC_REQUIRE(completes_on_return_v<support::RecordingComm<chorus::host::Comm>>);
  STATIC_REQUIRE(memory_space_v<support::RecordingComm<DeviceComm>> == MemorySpace::device);
  STATIC_REQUIRE_FALSE(completes_on_return_v<support::RecordingComm<DeviceComm>>);
  STATIC_REQUIRE(completes_on_return_v<support::RecordingComm<BlockingDeviceComm>>);
}

TEST_CASE("require_host_memory accepts host communicators", "[memory_space]") {
  // A device communicator stops the build: tests/consume/contract_rejects.sh checks the message.
  STATIC_REQUIRE(chorus::require_host_memory<chorus::host::Comm>());
  STATIC_REQUIRE(chorus::require_host_memory<EarlyHostComm>());
}

TEST_CASE("wait() is part of the contract", "[memory_space]") {
  STATIC_REQUIRE(chorus::contract::Requirements<DeviceComm>::wait);
  STATIC_REQUIRE_FALSE(chorus::contract::Requirements<NoWait>::wait);
  STATIC_REQUIRE(chorus::contract::Requirements<chorus::host::Comm>::wait);
  STATIC_REQUIRE(chorus::contract::Requirements<mailbox::Comm>::wait);
}

TEST_CASE("the mailbox communicator's wait is a no-op that refuses a moved-from communicator", "[memory_space]") {
  std::vector<std::string> refused(2);
  std::vector<int> sums(2, 0);  // Catch2 assertions stay on the main thread: the rank threads record
  mailbox::run(2, [&](mailbox::Comm& comm) {
    int x = comm.rank() + 1;
    comm.all_reduce(&x, &x, 1, chorus::ReduceOp::sum);
    comm.wait();
    sums[static_cast<std::size_t>(comm.rank())] = x;
    mailbox::Comm taken = std::move(comm);
    try {
      comm.wait();  // NOLINT(bugprone-use-after-move): what is tested
    } catch (const chorus::Error& e) {
      refused[static_cast<std::size_t>(taken.rank())] = e.what();
    }
    taken.wait();
  });
  CHECK(sums == std::vector<int>{3, 3});
  for (const std::string& message : refused) CHECK_THAT(message, Catch::StartsWith("chorus::wait: called on a null communicator"));
}

}  // namespace test_memory_space
