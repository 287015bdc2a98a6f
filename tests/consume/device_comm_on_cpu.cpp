// Must NOT compile: a communicator whose buffers are device memory handed to GradientReducer, which
// copies gradients into host buckets with the CPU. contract_rejects.sh checks that the compiler stops
// with require_host_memory's message and with nothing else (the fake keeps the whole contract).
#include <chorus/core/communicator.hpp>
#include <chorus/parallel/gradient_reducer.hpp>
#include <chorus/runtime/collective_front.hpp>

#include <cstddef>
#include <vector>

struct DeviceComm : chorus::runtime::CollectiveFront<DeviceComm> {
  static constexpr chorus::MemorySpace memory_space = chorus::MemorySpace::device;
  int rank() const;
  int size() const;
  using CollectiveFront<DeviceComm>::send;
  using CollectiveFront<DeviceComm>::recv;
  void send(const void*, std::size_t, chorus::DataType, int);
  void recv(void*, std::size_t, chorus::DataType, int);
  void barrier();
  void wait();
  DeviceComm split(int, int);
  template <class T> void typed_collective(const chorus::runtime::CollectiveArgs&);
  void erased_collective(const chorus::runtime::CollectiveArgs&);
};
static_assert(chorus::check_communicator<DeviceComm>(), "DeviceComm is a communicator");

void reduce_on_device(DeviceComm& comm, std::vector<chorus::parallel::ParamView> grads) {
  chorus::parallel::GradientReducer<DeviceComm> reducer(comm, std::move(grads));
}
