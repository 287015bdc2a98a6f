// chorus::cuda::IpcComm: one rank per process, one GPU each, running chorus's own collective kernels on
// memory the ranks share through CUDA IPC handles: the BasicIpcComm written once over a Device
// (basic_ipc_comm.hpp says what it does), here over CudaDevice. The CPU twin (twin/ipc_twin.hpp) runs the
// same template over TwinDevice, so everything but CudaDevice (device/cuda_device.cuh) is proven on the CPU.
//
//   chorus::mpi::Comm host(MPI_COMM_WORLD);
//   auto comm = chorus::cuda::IpcComm::create(host, local_rank);     // collective over `host`
//   comm.on(stream).all_reduce(send, recv, count, ReduceOp::sum);   // stream-ordered, returns at once
//   comm.wait();                                                     // bounded; a kernel timeout or an abort is chorus::Error
//
// Named IpcComm, not Comm: it is the IPC flavour of chorus's device communicators (cuda::Team is the
// in-process one, nccl::Comm the NCCL one), and a plain cuda::Comm would read as the per-rank view of a Team.
// Run on one H200 as one rank (the one-process checks) on 2026-12-04; not yet across processes
// (docs/gpu-validation.md).
#pragma once

#include "../core/config.hpp"
#include "basic_ipc_comm.hpp"
#include "device/cuda_device.cuh"
#include "team.cuh"

CHORUS_NAMESPACE_BEGIN namespace cuda {

using IpcComm = BasicIpcComm<CudaDevice>;

static_assert(check_communicator<IpcComm>(), "chorus::cuda::IpcComm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
