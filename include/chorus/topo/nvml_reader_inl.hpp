// nvml_reader.hpp's bodies and NVML's ABI: compiled in every translation unit in header-only
// mode, once in libchorus in compiled mode (core/config.hpp), so only they see <dlfcn.h>.
// Included by nvml_reader.hpp; not for direct use.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "busid.hpp"
#include "nvml_reader.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo {

namespace detail {
// NVML's ABI, as documented: every call returns 0 (NVML_SUCCESS) or an error code.
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlPciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS since NVLink 4

template <class Function>
Function nvml_symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  Function function = nullptr;
  static_assert(sizeof function == sizeof address, "function and object pointers differ in size");
  std::memcpy(&function, &address, sizeof function);  // dlsym's documented use, without a cast warning
  return function;
}

// Closes the library when the read is over, whatever happened.
struct NvmlSession {
  void* library = nullptr;
  int (*shutdown)() = nullptr;
  bool initialised = false;
  ~NvmlSession() {
    if (initialised && shutdown != nullptr) shutdown();
    if (library != nullptr) dlclose(library);
  }
};
}  // namespace detail

CHORUS_FUNC NvmlInfo read_nvml(const char* library_name) {
  NvmlInfo info;
  detail::NvmlSession session;
  session.library = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
  if (session.library == nullptr) {
    info.reason = std::string("cannot load ") + library_name + " (no NVIDIA driver?)";
    return info;
  }
  using Init = int (*)();
  using Count = int (*)(unsigned*);
  using Handle = int (*)(unsigned, detail::NvmlDevice*);
  using Pci = int (*)(detail::NvmlDevice, detail::NvmlPciInfo*);
  using Capability = int (*)(detail::NvmlDevice, int*, int*);
  using Name = int (*)(detail::NvmlDevice, char*, unsigned);
  using State = int (*)(detail::NvmlDevice, unsigned, int*);
  using Remote = int (*)(detail::NvmlDevice, unsigned, detail::NvmlPciInfo*);
  const auto init = detail::nvml_symbol<Init>(session.library, "nvmlInit_v2");
  session.shutdown = detail::nvml_symbol<Init>(session.library, "nvmlShutdown");
  const auto count = detail::nvml_symbol<Count>(session.library, "nvmlDeviceGetCount_v2");
  const auto handle = detail::nvml_symbol<Handle>(session.library, "nvmlDeviceGetHandleByIndex_v2");
  const auto pci = detail::nvml_symbol<Pci>(session.library, "nvmlDeviceGetPciInfo_v3");
  const auto capability = detail::nvml_symbol<Capability>(session.library, "nvmlDeviceGetCudaComputeCapability");
  const auto name = detail::nvml_symbol<Name>(session.library, "nvmlDeviceGetName");
  const auto state = detail::nvml_symbol<State>(session.library, "nvmlDeviceGetNvLinkState");
  const auto remote = detail::nvml_symbol<Remote>(session.library, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  const std::pair<const char*, bool> needed[] = {
      {"nvmlInit_v2", init != nullptr},           {"nvmlShutdown", session.shutdown != nullptr},
      {"nvmlDeviceGetCount_v2", count != nullptr}, {"nvmlDeviceGetHandleByIndex_v2", handle != nullptr},
      {"nvmlDeviceGetPciInfo_v3", pci != nullptr}};
  for (const auto& [symbol, found] : needed) {
    if (!found) {
      info.reason = std::string(library_name) + " has no " + symbol;
      return info;
    }
  }
  if (const int rc = init(); rc != 0) {
    info.reason = "nvmlInit_v2 failed with NVML error " + std::to_string(rc);
    return info;
  }
  session.initialised = true;
  unsigned devices = 0;
  if (const int rc = count(&devices); rc != 0) {
    info.reason = "nvmlDeviceGetCount_v2 failed with NVML error " + std::to_string(rc);
    return info;
  }
  for (unsigned i = 0; i < devices && i < 4096; ++i) {
    detail::NvmlDevice device = nullptr;
    if (handle(i, &device) != 0) continue;
    NvmlGpu gpu;
    gpu.index = static_cast<int>(i);
    // Room to spare after the struct: a newer library writing a longer struct cannot overrun it.
    struct {
      detail::NvmlPciInfo pci;
      char spare[256];
    } buffer{};
    if (pci(device, &buffer.pci) != 0) continue;
    buffer.pci.bus_id[sizeof buffer.pci.bus_id - 1] = '\0';
    gpu.busid = normalize_busid(buffer.pci.bus_id).value_or("");
    if (capability != nullptr) {
      int major = 0, minor = 0;
      if (capability(device, &major, &minor) == 0) gpu.sm = major * 10 + minor;
    }
    if (name != nullptr) {
      char text[256] = {};
      if (name(device, text, sizeof text - 1) == 0) gpu.name = text;
    }
    if (state != nullptr && remote != nullptr) {
      std::map<std::string, int> per_remote;
      for (unsigned link = 0; link < detail::kNvmlMaxLinks; ++link) {
        int active = 0;
        if (state(device, link, &active) != 0 || active == 0) continue;
        decltype(buffer) far{};
        if (remote(device, link, &far.pci) != 0) continue;
        far.pci.bus_id[sizeof far.pci.bus_id - 1] = '\0';
        const auto busid = normalize_busid(far.pci.bus_id);
        if (busid) ++per_remote[*busid];
      }
      for (const auto& [busid, links] : per_remote) gpu.links.push_back(NvmlLink{busid, links});
    }
    info.gpus.push_back(std::move(gpu));
  }
  info.available = true;
  return info;
}

CHORUS_FUNC void apply_nvml(Topology& topo, const NvmlInfo& info) {
  if (!info.available) return;
  std::map<std::pair<int, int>, int> pairs;
  std::map<int, int> to_switch;
  std::string switch_busid;
  for (const NvmlGpu& gpu : info.gpus) {
    const int node = topo.find_busid(gpu.busid);
    if (node < 0 || topo.nodes[node].kind != NodeKind::gpu) continue;
    if (gpu.sm > 0) topo.nodes[node].sm = gpu.sm;
    for (const NvmlLink& link : gpu.links) {
      const int far = topo.find_busid(link.remote_busid);
      if (far >= 0 && topo.nodes[far].kind == NodeKind::gpu) {
        int& count = pairs[std::make_pair(std::min(node, far), std::max(node, far))];
        count = std::max(count, link.count);
      } else {
        to_switch[node] += link.count;
        if (switch_busid.empty() || link.remote_busid < switch_busid) switch_busid = link.remote_busid;
      }
    }
  }
  for (const auto& [pair, count] : pairs) topo.add_nvlink(pair.first, pair.second, count);
  if (!to_switch.empty()) {
    const std::vector<int> existing = topo.nodes_of(NodeKind::nvswitch);
    const int sw = existing.empty() ? topo.add_nvswitch(switch_busid) : existing.front();
    for (const auto& [gpu, count] : to_switch) topo.add_nvlink(gpu, sw, count);
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo
