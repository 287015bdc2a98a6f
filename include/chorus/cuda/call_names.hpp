// How errors name a device communicator's calls: the Device's name, then the member, e.g.
// "cuda::Team::all_reduce" on a GPU and "cuda::twin::Team::all_reduce" on the CPU twin. One table for every
// communicator written over a Device, so the GPU and the twin word their errors alike.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../core/collective.hpp"
#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// "<Device::kName>::<member>", kept for the life of the program (errors and NVTX ranges hold the pointer).
template <class Device>
const char* call_name(const std::string& member) {
  static std::mutex mutex;
  static auto* names = new std::map<std::string, std::unique_ptr<const std::string>>;  // never destroyed: names outlive statics
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<const std::string>& name = (*names)[member];
  if (!name) name = std::make_unique<const std::string>(std::string(Device::kName) + "::" + member);
  return name->c_str();
}

// "<Device::kName>::<type>::<collective>", e.g. "cuda::twin::Team::broadcast".
template <class Device>
const char* call_name(const char* type, Collective collective) {
  return call_name<Device>(std::string(type) + "::" + to_string(collective));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
