// The CPU twin of the multi-process CUDA communicator: cuda::twin::IpcRank is the very BasicIpcComm the
// GPU runs (basic_ipc_comm.hpp), over TwinDevice (device/twin_device.hpp). Each rank is a host thread (or
// anything with a chorus host communicator) with a twin device of its own: its own memory, found by its
// peers through the same bootstrap (ipc_bootstrap.hpp) and the twin's IPC registry (opens are counted:
// TwinDevice::ipc_registry().open_count()), and streams that are worker threads, so a call returns before
// its kernel ran, as on a GPU, and results may be read after wait().
//
//   host_team.run([&](chorus::host::Comm& host) {
//     auto rank = chorus::cuda::twin::IpcRank::create(host, host.rank());   // twin device = rank
//     rank.all_reduce(send, recv, count, ReduceOp::sum);                      // the contract's forms
//     rank.all_reduce_with(send, recv, count, ReduceOp::sum, kernel::KernelAlgorithm::ring);  // a chosen kernel
//     rank.group([&] { rank.send(out, n, next); rank.recv(in, n, prev); });  // both in one launch
//     rank.wait();                                                            // now the results may be read
//   });
#pragma once

#include "../../core/config.hpp"
#include "../basic_ipc_comm.hpp"
#include "../device/twin_device.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

using IpcOptions = BasicTeamOptions<TwinDevice>;
using IpcComm = BasicIpcComm<TwinDevice>;
using IpcRank = IpcComm;  // errors name it as its GPU twin: "cuda::twin::IpcComm::all_reduce"

static_assert(check_communicator<IpcRank>(), "the IPC twin must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
