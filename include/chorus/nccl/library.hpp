// The NCCL and CUDA runtime functions the wrapper calls, one forwarding function each. nccl::Comm is
// BasicComm<Library>; the CPU tests instantiate BasicComm with a scripted fake of this struct
// (tests/nccl/fake_library.hpp), so every path of the wrapper (argument checks, what reaches NCCL,
// nonblocking progress, aborts) is proven without a GPU. Keep it a list of one-line forwards: anything
// with logic here would be untested on the CPU.
#pragma once

#include "nccl_header.hpp"

#include <cstddef>
#include <string>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace nccl {

struct Library {
  static ncclResult_t get_version(int* version) { return ncclGetVersion(version); }
  static ncclResult_t get_unique_id(ncclUniqueId* id) { return ncclGetUniqueId(id); }
  static ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
    return ncclCommInitRankConfig(comm, nranks, id, rank, config);
  }
  static ncclResult_t comm_split(ncclComm_t comm, int color, int key, ncclComm_t* part, ncclConfig_t* config) {
    return ncclCommSplit(comm, color, key, part, config);
  }
  static ncclResult_t comm_finalize(ncclComm_t comm) { return ncclCommFinalize(comm); }
  static ncclResult_t comm_destroy(ncclComm_t comm) { return ncclCommDestroy(comm); }
  static ncclResult_t comm_abort(ncclComm_t comm) { return ncclCommAbort(comm); }
  static ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* state) { return ncclCommGetAsyncError(comm, state); }
  static ncclResult_t comm_count(ncclComm_t comm, int* count) { return ncclCommCount(comm, count); }
  static ncclResult_t comm_user_rank(ncclComm_t comm, int* rank) { return ncclCommUserRank(comm, rank); }
  static ncclResult_t comm_cu_device(ncclComm_t comm, int* device) { return ncclCommCuDevice(comm, device); }
  static std::string last_error(ncclComm_t comm) {
    const char* text = ncclGetLastError(comm);
    return text != nullptr ? text : "";
  }

  static ncclResult_t group_start() { return ncclGroupStart(); }
  static ncclResult_t group_end() { return ncclGroupEnd(); }

  static ncclResult_t all_reduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                                 ncclComm_t comm, cudaStream_t stream) {
    return ncclAllReduce(send, recv, count, type, op, comm, stream);
  }
  static ncclResult_t broadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                                ncclComm_t comm, cudaStream_t stream) {
    return ncclBroadcast(send, recv, count, type, root, comm, stream);
  }
  static ncclResult_t reduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                             ncclComm_t comm, cudaStream_t stream) {
    return ncclReduce(send, recv, count, type, op, root, comm, stream);
  }
  static ncclResult_t all_gather(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclComm_t comm,
                                 cudaStream_t stream) {
    return ncclAllGather(send, recv, count, type, comm, stream);
  }
  static ncclResult_t reduce_scatter(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                                     ncclComm_t comm, cudaStream_t stream) {
    return ncclReduceScatter(send, recv, count, type, op, comm, stream);
  }
  static ncclResult_t send(const void* data, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
    return ncclSend(data, count, type, peer, comm, stream);
  }
  static ncclResult_t recv(void* data, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
    return ncclRecv(data, count, type, peer, comm, stream);
  }

  static cudaError_t get_device(int* device) { return cudaGetDevice(device); }
  static cudaError_t set_device(int device) { return cudaSetDevice(device); }
  static cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
    return cudaStreamIsCapturing(stream, status);
  }
  static cudaError_t exchange_capture_mode(cudaStreamCaptureMode* mode) { return cudaThreadExchangeStreamCaptureMode(mode); }
  static cudaError_t event_create(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDisableTiming); }
  static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) { return cudaEventRecord(event, stream); }
  static cudaError_t event_query(cudaEvent_t event) { return cudaEventQuery(event); }
  static cudaError_t event_destroy(cudaEvent_t event) { return cudaEventDestroy(event); }
  static cudaError_t malloc(void** data, std::size_t bytes) { return cudaMalloc(data, bytes); }
  static cudaError_t free(void* data) { return cudaFree(data); }
  static cudaError_t malloc_async(void** data, std::size_t bytes, cudaStream_t stream) {
    return cudaMallocAsync(data, bytes, stream);
  }
  static cudaError_t free_async(void* data, cudaStream_t stream) { return cudaFreeAsync(data, stream); }
  static cudaError_t copy_async(void* to, const void* from, std::size_t bytes, cudaStream_t stream) {
    return cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream);
  }
  static cudaError_t memset_async(void* data, int value, std::size_t bytes, cudaStream_t stream) {
    return cudaMemsetAsync(data, value, bytes, stream);
  }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::nccl
