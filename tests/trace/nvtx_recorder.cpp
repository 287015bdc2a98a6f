// An NVTX tool linked into a test program: NVTX3's loader calls InitializeInjectionNvtx2_fnptr (its
// static-injection hook, nvtxDetail/nvtxInit.h) on the first NVTX call, and the tool replaces the
// core module's RangePushA and RangePop with recorders. That is the path a profiler's injection
// library takes, so the test sees exactly the ranges Nsight Systems would, with no hook in chorus.
// This file holds the one strong definition of the hook; every other unit keeps NVTX's weak one.
#include <cstdint>

// NVTX's loader reads the hook but, with NVTX_STATIC_INJECTION_IMPL, leaves declaring it to the tool:
// the type is NvtxInitializeInjectionNvtxFunc_t (nvtxDetail/nvtxTypes.h), spelled out before it exists.
extern "C" {
extern int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t));
}
#define NVTX_STATIC_INJECTION_IMPL
#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <string>
#include <vector>

#include "nvtx_recorder.hpp"

namespace nvtx_recorder {
namespace {

struct Log {
  std::mutex mutex;
  std::vector<std::string> events;
  bool attached = false;
};

Log& log() {
  static Log instance;
  return instance;
}

int NVTX_API record_push(const char* message) {
  std::lock_guard<std::mutex> lock(log().mutex);
  log().events.push_back(std::string("push ") + (message != nullptr ? message : "(null)"));
  return 0;
}

int NVTX_API record_pop() {
  std::lock_guard<std::mutex> lock(log().mutex);
  log().events.push_back("pop");
  return 0;
}

int NVTX_API attach(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 || table == nullptr ||
      size <= NVTX_CBID_CORE_RangePop) {
    return 0;
  }
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&record_push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&record_pop);
  std::lock_guard<std::mutex> lock(log().mutex);
  log().attached = true;
  return 1;
}

}  // namespace

std::vector<std::string> take() {
  std::lock_guard<std::mutex> lock(log().mutex);
  std::vector<std::string> out;
  out.swap(log().events);
  return out;
}

bool attached() {
  std::lock_guard<std::mutex> lock(log().mutex);
  return log().attached;
}

}  // namespace nvtx_recorder

extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &nvtx_recorder::attach;
}
