// A scripted stand-in for nccl::Library (include/chorus/nccl/library.hpp): no GPU, no NCCL calls. It
// records every call with its arguments, and reports what the test scripts: how many polls a
// nonblocking operation stays ncclInProgress, an asynchronous error, a failing function, a stream that
// stays busy. nccl::BasicComm<fake::Library> then runs chorus's real wrapper code on the CPU.
// "Device" buffers are host memory; communicators are FakeComm objects behind the opaque ncclComm_t.
//
// Streams run on the wall clock, as a GPU would: each stream is busy until some time point, which work
// pushes further (queue_work: the caller's unrelated kernels; every NCCL call: Script::kernel_ms, or
// forever with Script::kernels_hang), and an event recorded on a stream completes when the stream gets
// there. A stream may be marked as being captured (set_capturing): cudaStreamQuery on it then fails as
// CUDA's does, and cudaMalloc is refused while any stream is captured unless the calling thread is in
// relaxed capture mode.
#pragma once

#include <chorus/nccl/nccl_header.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace fake {

using Clock = std::chrono::steady_clock;

struct Call {
  std::string function;
  const void* send = nullptr;  // send buffer, or the only buffer (send/recv, memset, free)
  void* recv = nullptr;
  std::size_t count = 0;  // elements, or bytes for the CUDA calls
  ncclDataType_t type = ncclInt8;
  ncclRedOp_t op = ncclSum;
  int root_or_peer = -1;  // root, peer, colour (split) or device (set_device)
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;  // the CUDA event calls
  int async_polls = 0;          // ncclCommGetAsyncError calls made before this one
};

struct FakeComm {
  int rank = 0;
  int size = 1;
  int device = 0;
  int busy_polls = 0;  // async error reads ncclInProgress this many more times
  ncclResult_t async = ncclSuccess;
  bool blocking_config = true;
  ncclUniqueId id{};
  // NCCL's background job writes the caller's slot when it ends: init writes the communicator again,
  // split writes the child (null for NCCL_SPLIT_NOCOLOR) only then. The fake does it on the first
  // ncclCommGetAsyncError that finds the job done.
  ncclComm_t* slot = nullptr;
  ncclComm_t slot_value = nullptr;
};

struct Script {
  int version = NCCL_VERSION_CODE;
  int device_count = 4;
  int busy_polls = 0;                        // every init, split, finalize and ncclInProgress call stays busy this long
  ncclResult_t call_result = ncclSuccess;    // what collectives, send and recv return
  ncclResult_t group_end_result = ncclSuccess;
  std::map<std::string, ncclResult_t> fail;  // function name -> result it returns
  int split_size = 0;                        // 0: the parent's size
  long kernel_ms = 0;                        // how long each collective, send or recv runs on its stream
  bool kernels_hang = false;                 // ... or whether it never ends
  cudaError_t event_result = cudaSuccess;    // what cudaEventQuery of a recorded event returns when not busy
};

struct FakeStream {
  Clock::time_point busy_until{};  // when the work enqueued so far is done
  bool capturing = false;
};

struct FakeEvent {
  bool recorded = false;
  Clock::time_point complete_at{};
  bool destroyed = false;
};

struct State {
  std::mutex mutex;
  Script script;
  std::vector<Call> calls;
  std::deque<std::unique_ptr<FakeComm>> comms;
  std::map<cudaStream_t, FakeStream> streams;
  std::deque<std::unique_ptr<FakeEvent>> events;
  int async_polls = 0;
  int unique_ids = 0;
};

inline State& state() {
  static State s;
  return s;
}

inline void reset(const Script& script = Script()) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.script = script;
  s.calls.clear();
  s.comms.clear();
  s.async_polls = 0;
  s.unique_ids = 0;
  s.streams.clear();
  s.events.clear();
}

// Pushes how long `stream` stays busy by `duration` from when it is free (now, or when its earlier work ends);
// Clock::duration::max() is forever. Call with the mutex held.
inline void occupy(cudaStream_t stream, Clock::duration duration) {
  FakeStream& st = state().streams[stream];
  const Clock::time_point start = std::max(st.busy_until, Clock::now());
  st.busy_until = duration >= Clock::time_point::max() - start ? Clock::time_point::max() : start + duration;
}

// The caller's own work on `stream`, `ms` long (negative: it never ends).
inline void queue_work(cudaStream_t stream, long ms) {
  std::lock_guard<std::mutex> lock(state().mutex);
  occupy(stream, ms < 0 ? Clock::duration::max() : Clock::duration(std::chrono::milliseconds(ms)));
}

// Whether work enqueued on `stream` goes into a graph being captured.
inline void set_capturing(cudaStream_t stream, bool capturing) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().streams[stream].capturing = capturing;
}

// Events made and not destroyed.
inline int live_events() {
  std::lock_guard<std::mutex> lock(state().mutex);
  int n = 0;
  for (const auto& e : state().events) n += e->destroyed ? 0 : 1;
  return n;
}

// This thread's stream capture mode (cudaThreadExchangeStreamCaptureMode).
inline cudaStreamCaptureMode& capture_mode() {
  thread_local cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  return mode;
}

inline FakeComm& comm_of(ncclComm_t comm) { return *reinterpret_cast<FakeComm*>(comm); }

inline std::vector<Call> calls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().calls;
}

// Names of the calls made, in order, optionally only those for one communicator.
inline std::vector<std::string> names(ncclComm_t comm = nullptr) {
  std::vector<std::string> out;
  for (const Call& c : calls()) {
    if (comm == nullptr || c.comm == comm) out.push_back(c.function);
  }
  return out;
}

inline void clear_calls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().calls.clear();
}

// The wrapper's bookkeeping, which most tests leave out of the calls they compare: the version query,
// the capture check and the events of wait().
inline bool bookkeeping(const std::string& function) {
  return function == "ncclGetVersion" || function == "cudaStreamIsCapturing" || function.rfind("cudaEvent", 0) == 0;
}

// Names of the calls made, in order, less the bookkeeping.
inline std::vector<std::string> work_names() {
  std::vector<std::string> out;
  for (const Call& c : calls()) {
    if (!bookkeeping(c.function)) out.push_back(c.function);
  }
  return out;
}

inline int count(const std::string& function) {
  int n = 0;
  for (const Call& c : calls()) n += c.function == function ? 1 : 0;
  return n;
}

inline int& current_device() {
  thread_local int device = 0;
  return device;
}

struct Library {
  static ncclResult_t record(Call call) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    call.async_polls = s.async_polls;
    s.calls.push_back(call);
    auto failing = s.script.fail.find(call.function);
    return failing != s.script.fail.end() ? failing->second : ncclSuccess;
  }
  static ncclResult_t busy(ncclComm_t comm) {
    std::lock_guard<std::mutex> lock(state().mutex);
    comm_of(comm).busy_polls = state().script.busy_polls;
    return state().script.busy_polls > 0 ? ncclInProgress : ncclSuccess;
  }

  static ncclResult_t get_version(int* version) {
    *version = state().script.version;
    return record({"ncclGetVersion"});
  }
  static ncclResult_t get_unique_id(ncclUniqueId* id) {
    std::memset(id, 0, sizeof(*id));
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      n = ++state().unique_ids;
    }
    std::snprintf(id->internal, sizeof(id->internal), "fake unique id %d", n);
    return record({"ncclGetUniqueId"});
  }
  static ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
    ncclResult_t failing = record({"ncclCommInitRankConfig", nullptr, nullptr, 0, ncclInt8, ncclSum, rank});
    if (failing != ncclSuccess) return failing;
    auto made = std::make_unique<FakeComm>();
    made->rank = rank;
    made->size = nranks;
    made->device = current_device();
    made->blocking_config = config == nullptr || config->blocking != 0;
    made->id = id;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      *comm = reinterpret_cast<ncclComm_t>(made.get());
      made->slot = comm;
      made->slot_value = *comm;
      state().comms.push_back(std::move(made));
    }
    return busy(*comm);
  }
  static ncclResult_t comm_split(ncclComm_t comm, int color, int key, ncclComm_t* part, ncclConfig_t*) {
    ncclResult_t failing = record({"ncclCommSplit", nullptr, nullptr, 0, ncclInt8, ncclSum, color, comm});
    if (failing != ncclSuccess) return failing;
    *part = nullptr;  // as NCCL: null until the split's job ends
    ncclComm_t child = nullptr;
    if (color != NCCL_SPLIT_NOCOLOR) {
      auto made = std::make_unique<FakeComm>();
      made->rank = key;
      made->size = state().script.split_size > 0 ? state().script.split_size : comm_of(comm).size;
      made->device = comm_of(comm).device;
      std::lock_guard<std::mutex> lock(state().mutex);
      child = reinterpret_cast<ncclComm_t>(made.get());
      state().comms.push_back(std::move(made));
    }
    if (child != nullptr) busy(child);
    busy(comm);
    std::lock_guard<std::mutex> lock(state().mutex);
    comm_of(comm).slot = part;
    comm_of(comm).slot_value = child;
    return ncclSuccess;  // as NCCL: success, though the job runs on (the parent reads ncclInProgress)
  }
  static ncclResult_t comm_finalize(ncclComm_t comm) {
    ncclResult_t failing = record({"ncclCommFinalize", nullptr, nullptr, 0, ncclInt8, ncclSum, -1, comm});
    return failing != ncclSuccess ? failing : busy(comm);
  }
  static ncclResult_t comm_destroy(ncclComm_t comm) { return record({"ncclCommDestroy", nullptr, nullptr, 0, ncclInt8, ncclSum, -1, comm}); }
  static ncclResult_t comm_abort(ncclComm_t comm) { return record({"ncclCommAbort", nullptr, nullptr, 0, ncclInt8, ncclSum, -1, comm}); }
  static ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* result) {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().async_polls;
    FakeComm& c = comm_of(comm);
    if (c.async != ncclSuccess) {
      *result = c.async;
    } else if (c.busy_polls > 0) {
      --c.busy_polls;
      *result = ncclInProgress;
    } else {
      *result = ncclSuccess;
      if (c.slot != nullptr) *c.slot = c.slot_value;
      c.slot = nullptr;
    }
    return ncclSuccess;
  }
  static ncclResult_t comm_count(ncclComm_t comm, int* n) {
    *n = comm_of(comm).size;
    return ncclSuccess;
  }
  static ncclResult_t comm_user_rank(ncclComm_t comm, int* rank) {
    *rank = comm_of(comm).rank;
    return ncclSuccess;
  }
  static ncclResult_t comm_cu_device(ncclComm_t comm, int* device) {
    *device = comm_of(comm).device;
    return ncclSuccess;
  }
  static std::string last_error(ncclComm_t) { return "fake last error"; }

  static ncclResult_t group_start() { return record({"ncclGroupStart"}); }
  static ncclResult_t group_end() {
    const ncclResult_t failing = record({"ncclGroupEnd"});
    return failing != ncclSuccess ? failing : state().script.group_end_result;
  }

  static ncclResult_t enqueued(Call call) {
    const ncclResult_t failing = record(call);
    if (failing != ncclSuccess) return failing;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      const Script& script = state().script;
      occupy(call.stream, script.kernels_hang ? Clock::duration::max()
                                              : Clock::duration(std::chrono::milliseconds(script.kernel_ms)));
    }
    const ncclResult_t result = state().script.call_result;
    return result == ncclInProgress ? busy(call.comm) : result;
  }
  static ncclResult_t all_reduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                                 ncclComm_t comm, cudaStream_t stream) {
    return enqueued({"ncclAllReduce", send, recv, count, type, op, -1, comm, stream});
  }
  static ncclResult_t broadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                                ncclComm_t comm, cudaStream_t stream) {
    return enqueued({"ncclBroadcast", send, recv, count, type, ncclSum, root, comm, stream});
  }
  static ncclResult_t reduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                             ncclComm_t comm, cudaStream_t stream) {
    return enqueued({"ncclReduce", send, recv, count, type, op, root, comm, stream});
  }
  static ncclResult_t all_gather(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclComm_t comm,
                                 cudaStream_t stream) {
    return enqueued({"ncclAllGather", send, recv, count, type, ncclSum, -1, comm, stream});
  }
  static ncclResult_t reduce_scatter(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                                     ncclComm_t comm, cudaStream_t stream) {
    return enqueued({"ncclReduceScatter", send, recv, count, type, op, -1, comm, stream});
  }
  static ncclResult_t send(const void* data, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
    return enqueued({"ncclSend", data, nullptr, count, type, ncclSum, peer, comm, stream});
  }
  static ncclResult_t recv(void* data, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
    return enqueued({"ncclRecv", nullptr, data, count, type, ncclSum, peer, comm, stream});
  }

  static cudaError_t cuda(Call call) {
    return record(call) == ncclSuccess ? cudaSuccess : cudaErrorInvalidValue;
  }
  static cudaError_t get_device(int* device) {
    *device = current_device();
    return cudaSuccess;
  }
  static cudaError_t set_device(int device) {
    record({"cudaSetDevice", nullptr, nullptr, 0, ncclInt8, ncclSum, device});
    if (device >= state().script.device_count) return cudaErrorInvalidDevice;
    current_device() = device;
    return cudaSuccess;
  }
  // What the wrapper no longer calls (wait() polls events), kept so the wrapper's older wait, which polled
  // the whole stream, still runs against this fake: the tests that say so go red with it.
  static cudaError_t stream_query(cudaStream_t stream) {
    record({"cudaStreamQuery", nullptr, nullptr, 0, ncclInt8, ncclSum, -1, nullptr, stream});
    std::lock_guard<std::mutex> lock(state().mutex);
    FakeStream& st = state().streams[stream];
    if (st.capturing) return cudaErrorStreamCaptureUnsupported;  // and CUDA invalidates the capture
    return Clock::now() < st.busy_until ? cudaErrorNotReady : cudaSuccess;
  }
  static cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
    record({"cudaStreamIsCapturing", nullptr, nullptr, 0, ncclInt8, ncclSum, -1, nullptr, stream});
    std::lock_guard<std::mutex> lock(state().mutex);
    *status = state().streams[stream].capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  static cudaError_t exchange_capture_mode(cudaStreamCaptureMode* mode) {
    std::swap(*mode, capture_mode());
    return cudaSuccess;
  }
  static cudaError_t event_create(cudaEvent_t* event) {
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      state().events.push_back(std::make_unique<FakeEvent>());
      *event = reinterpret_cast<cudaEvent_t>(state().events.back().get());
    }
    Call call{"cudaEventCreate"};
    call.event = *event;
    return cuda(call);
  }
  static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) {
    Call call{"cudaEventRecord", nullptr, nullptr, 0, ncclInt8, ncclSum, -1, nullptr, stream};
    call.event = event;
    const cudaError_t status = cuda(call);
    if (status != cudaSuccess) return status;
    std::lock_guard<std::mutex> lock(state().mutex);
    FakeEvent& e = *reinterpret_cast<FakeEvent*>(event);
    e.recorded = true;
    e.complete_at = std::max(state().streams[stream].busy_until, Clock::now());
    return cudaSuccess;
  }
  static cudaError_t event_query(cudaEvent_t event) {
    std::lock_guard<std::mutex> lock(state().mutex);
    const FakeEvent& e = *reinterpret_cast<FakeEvent*>(event);
    if (e.destroyed) return cudaErrorInvalidResourceHandle;
    if (!e.recorded) return cudaSuccess;  // as CUDA: an event never recorded is complete
    if (Clock::now() < e.complete_at) return cudaErrorNotReady;
    return state().script.event_result;
  }
  static cudaError_t event_destroy(cudaEvent_t event) {
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      reinterpret_cast<FakeEvent*>(event)->destroyed = true;
    }
    Call call{"cudaEventDestroy"};
    call.event = event;
    return cuda(call);
  }
  // cudaMalloc is "potentially unsafe" during a capture in global mode: refused, as CUDA refuses it.
  static cudaError_t malloc(void** data, std::size_t bytes) {
    bool refused = false;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      for (const auto& [stream, st] : state().streams) refused = refused || (st.capturing && capture_mode() == cudaStreamCaptureModeGlobal);
    }
    *data = refused ? nullptr : ::operator new(bytes == 0 ? 1 : bytes);
    const cudaError_t status = cuda({"cudaMalloc", nullptr, *data, bytes, ncclInt8, ncclSum, static_cast<int>(capture_mode())});
    if (refused) return cudaErrorStreamCaptureUnsupported;
    return status;
  }
  static cudaError_t free(void* data) {
    const cudaError_t status = cuda({"cudaFree", data, nullptr, 0, ncclInt8, ncclSum, static_cast<int>(capture_mode())});
    ::operator delete(data);
    return status;
  }
  static cudaError_t malloc_async(void** data, std::size_t bytes, cudaStream_t stream) {
    *data = ::operator new(bytes == 0 ? 1 : bytes);
    return cuda({"cudaMallocAsync", nullptr, *data, bytes, ncclInt8, ncclSum, -1, nullptr, stream});
  }
  static cudaError_t free_async(void* data, cudaStream_t stream) {
    const cudaError_t status = cuda({"cudaFreeAsync", data, nullptr, 0, ncclInt8, ncclSum, -1, nullptr, stream});
    ::operator delete(data);
    return status;
  }
  static cudaError_t copy_async(void* to, const void* from, std::size_t bytes, cudaStream_t stream) {
    std::memcpy(to, from, bytes);
    return cuda({"cudaMemcpyAsync", from, to, bytes, ncclInt8, ncclSum, -1, nullptr, stream});
  }
  static cudaError_t memset_async(void* data, int value, std::size_t bytes, cudaStream_t stream) {
    std::memset(data, value, bytes);
    return cuda({"cudaMemsetAsync", data, nullptr, bytes, ncclInt8, ncclSum, -1, nullptr, stream});
  }
};

}  // namespace fake
