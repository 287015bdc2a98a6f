// The NVTX range around one collective launch of a device communicator (BasicTeam, BasicIpcComm), named
// as NCCL names its ranges plus the kernel that runs, e.g. "chorus::all_reduce 4 MiB float32 sum two_shot"
// (runtime/nvtx_range.hpp): Algorithm::automatic shows what kernel_for_call chose. Empty without NVTX.
#pragma once

#include <algorithm>
#include <cstddef>

#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/nvtx_range.hpp"
#include "kernel/all_reduce_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class T>
runtime::NvtxRange collective_range(Collective collective, std::size_t count, ReduceOp op, int root, int ranks,
                                    kernel::KernelAlgorithm algorithm) {
  runtime::CallDescriptor described;
  described.kind = runtime::kind_of(collective);
  described.type = data_type_v<T>;
  described.count = count;
  described.op = op;
  described.root = root;
  const std::size_t bytes = std::max(send_count(collective, count, ranks), recv_count(collective, count, ranks)) * sizeof(T);
  return runtime::NvtxRange(described, bytes, kernel::to_string(algorithm));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
