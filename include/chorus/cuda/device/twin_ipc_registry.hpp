// The CPU twin's stand-in for CUDA IPC: a "handle" names an allocation of another rank in this process
// (ranks are threads), and opening it is counted, so a test can check that every open was closed.
// Shared by the ranks, as the driver is; TwinDevice exports and opens through it.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../ipc_record.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

// The twin's driver: exports allocations as handles and opens them again, counting opens.
class IpcRegistry {
 public:
  IpcHandle export_memory(void* pointer) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t id = ++last_id_;
    exported_[id] = pointer;
    IpcHandle handle{};
    std::memcpy(handle.bytes, kTag, sizeof(kTag));
    std::memcpy(handle.bytes + sizeof(kTag), &id, sizeof(id));
    return handle;
  }
  void unexport(void* pointer) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = exported_.begin(); it != exported_.end(); ++it) {
      if (it->second == pointer) {
        exported_.erase(it);
        return;
      }
    }
  }

  // As cudaIpcOpenMemHandle: fails for a handle that names nothing exported.
  void* open(const IpcHandle& handle, int peer) {
    std::uint64_t id = 0;
    std::memcpy(&id, handle.bytes + sizeof(kTag), sizeof(id));
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = exported_.find(id);
    if (std::memcmp(handle.bytes, kTag, sizeof(kTag)) != 0 || it == exported_.end()) {
      throw make_error(ErrorCode::invalid_argument, "cuda::twin::IpcRegistry::open", peer, "its handle names no exported memory");
    }
    ++open_[it->second];
    return it->second;
  }
  void close(void* pointer) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = open_.find(pointer);
    if (it != open_.end() && --it->second == 0) open_.erase(it);
  }

  // Opens not yet closed, over all allocations.
  int open_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int count = 0;
    for (const auto& entry : open_) count += entry.second;
    return count;
  }

 private:
  static constexpr unsigned char kTag[8] = {'c', 'h', 'o', 'r', 'u', 's', 't', 'w'};
  mutable std::mutex mutex_;
  std::uint64_t last_id_ = 0;
  std::map<std::uint64_t, void*> exported_;
  std::map<void*, int> open_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
