// chorus::mpi::NativeComm: the same interface as mpi::Comm, forwarded to MPI's own collectives
// (MPI_Iallreduce, MPI_Ibcast, ...), so a benchmark can set chorus's schedules beside the MPI
// library's on the same processes. The checks around the call are chorus's: argument checks, the
// per-call agreement check (a rank that skipped a call or passed another count gets
// chorus::Error, where MPI would hang or abort the job), bounded waits and failure release. That is
// why it uses the nonblocking collectives: a blocking one cannot be abandoned when a peer fails.
// Before posting, every rank agrees on the call (Endpoint::agree, one small MPI_Iallreduce): MPI
// reports a collective's mismatched counts to MPI_COMM_WORLD's fatal handler, so a mismatched
// collective must never be posted.
//
// Differences from mpi::Comm, all MPI's:
//   - MPI picks the algorithm: anything but Algorithm::automatic is `unsupported`;
//   - min/max of floating-point NaNs and the order of floating-point sums are MPI's (not
//     guaranteed identical on every rank);
//   - counts above INT_MAX elements are `unsupported` (MPI counts are int);
//   - avg is MPI_SUM followed by chorus's divide, as NCCL defines avg.
#pragma once

#include "mpi_header.hpp"

#include <climits>
#include <cstddef>
#include <cstring>
#include <vector>

#include "../core/config.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/element_ops.hpp"
#include "basic_comm.hpp"
#include "data_types.hpp"
#include "endpoint.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi {
namespace detail {

class NativeCollectives {
 public:
  static constexpr const char* kName = "mpi::NativeComm";
  static constexpr bool kDrains = false;  // its data channel carries MPI's collectives

  void prepare(const runtime::CollectiveArgs& args, const runtime::CheckedCall&, const Endpoint& endpoint) const {
    const char* name = traits(args.collective).name;
    if (args.algorithm != Algorithm::automatic) {
      throw make_error(ErrorCode::unsupported, name, endpoint.name(), "mpi::NativeComm runs MPI's own algorithms; ",
                       to_string(args.algorithm), " cannot be forced (use mpi::Comm)");
    }
    const std::size_t largest = traits(args.collective).send_per_rank || traits(args.collective).recv_per_rank
                                    ? args.count * static_cast<std::size_t>(endpoint.size())
                                    : args.count;
    if (largest > static_cast<std::size_t>(INT_MAX)) {
      throw make_error(ErrorCode::unsupported, name, endpoint.name(), "count ", args.count,
                       " needs more than INT_MAX elements in one MPI call; mpi::Comm splits large messages");
    }
  }

  void run(const runtime::CollectiveArgs& args, const runtime::CheckedCall& checked, const runtime::ElementOps*,
           Endpoint& endpoint) {
    endpoint.agree();  // never post an MPI collective that the other ranks call differently
    std::vector<std::byte>& staging = endpoint.memory().native_staging;
    const int count = static_cast<int>(args.count);
    const MPI_Datatype type = to_mpi(args.type);
    const MPI_Comm comm = endpoint.data();
    const void* send = args.send;
    void* recv = args.recv;
    const std::size_t block = args.count * checked.element_size;
    MPI_Request request = MPI_REQUEST_NULL;
    int code = MPI_SUCCESS;
    const char* function = "";
    switch (args.collective) {
      case Collective::all_reduce:
        function = "MPI_Iallreduce";
        code = MPI_Iallreduce(checked.buffers_alias ? MPI_IN_PLACE : send, recv, count, type,
                              to_mpi(args.op, args.type), comm, &request);
        break;
      case Collective::broadcast:
        function = "MPI_Ibcast";
        if (endpoint.rank() == args.root && !checked.buffers_alias && block > 0) std::memcpy(recv, send, block);
        code = MPI_Ibcast(recv, count, type, args.root, comm, &request);
        break;
      case Collective::reduce:
        function = "MPI_Ireduce";
        code = MPI_Ireduce(endpoint.rank() == args.root && checked.buffers_alias ? MPI_IN_PLACE : send, recv, count,
                           type, to_mpi(args.op, args.type), args.root, comm, &request);
        break;
      case Collective::all_gather:
        function = "MPI_Iallgather";
        code = MPI_Iallgather(checked.buffers_alias ? MPI_IN_PLACE : send, count, type, recv, count, type, comm,
                              &request);
        break;
      case Collective::reduce_scatter:
        // In place, the result belongs at send + rank * count, which MPI_IN_PLACE does not do (it
        // leaves the result at the start): reduce into a staging block instead.
        function = "MPI_Ireduce_scatter_block";
        staging.resize(checked.buffers_alias ? block : 0);
        code = MPI_Ireduce_scatter_block(send, checked.buffers_alias ? staging.data() : recv, count, type,
                                         to_mpi(args.op, args.type), comm, &request);
        break;
      case Collective::all_to_all:
        // MPI forbids aliased send and receive buffers: in place sends from a copy.
        function = "MPI_Ialltoall";
        if (checked.buffers_alias) {
          staging.assign(static_cast<const std::byte*>(send),
                          static_cast<const std::byte*>(send) + block * static_cast<std::size_t>(endpoint.size()));
          send = staging.data();
        }
        code = MPI_Ialltoall(send, count, type, recv, count, type, comm, &request);
        break;
    }
    check_mpi(code, endpoint.call(), endpoint.name(), function);
    endpoint.wait(&request, 1, [function] { return chorus::detail::concat(function, " to complete"); });
    if (args.collective == Collective::reduce_scatter && checked.buffers_alias && block > 0) {
      std::memcpy(recv, staging.data(), block);
    }
  }
};

}  // namespace detail

using NativeComm = BasicComm<detail::NativeCollectives>;
static_assert(check_communicator<NativeComm>(), "chorus::mpi::NativeComm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi
