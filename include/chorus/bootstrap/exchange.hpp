// Bootstrap exchanges over any communicator: what NCCL and CUDA IPC need before a device
// communicator exists. Both work on any plain-bytes object, so this header needs neither NCCL nor CUDA:
//
//   ncclUniqueId id;
//   if (host.rank() == 0) ncclGetUniqueId(&id);
//   chorus::bootstrap::broadcast_object(host, id);            // every rank now holds rank 0's id
//
//   cudaIpcMemHandle_t mine;  cudaIpcGetMemHandle(&mine, buffer);
//   auto handles = chorus::bootstrap::all_gather_object(host, mine);  // handles[r]: rank r's
//
// `host` is any communicator (is_communicator_v): host::Comm, mpi::Comm, a test double.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace bootstrap {

// Replaces `object` on every rank with the root's.
template <class Comm, class T>
void broadcast_object(Comm& comm, T& object, int root = 0) {
  static_assert(is_communicator_v<Comm>, "broadcast_object needs a chorus communicator");
  static_assert(std::is_trivially_copyable_v<T>, "broadcast_object sends an object's bytes: T must be trivially copyable");
  auto* bytes = reinterpret_cast<std::uint8_t*>(&object);
  comm.broadcast(bytes, bytes, sizeof(T), root);
}

// Every rank's `object`, in rank order.
template <class Comm, class T>
std::vector<T> all_gather_object(Comm& comm, const T& object) {
  static_assert(is_communicator_v<Comm>, "all_gather_object needs a chorus communicator");
  static_assert(std::is_trivially_copyable_v<T>, "all_gather_object sends an object's bytes: T must be trivially copyable");
  std::vector<T> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather(reinterpret_cast<const std::uint8_t*>(&object), reinterpret_cast<std::uint8_t*>(all.data()),
                  sizeof(T));
  return all;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bootstrap
