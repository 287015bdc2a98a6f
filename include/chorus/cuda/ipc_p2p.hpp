// One send or receive of a multi-process CUDA communicator (cuda::IpcComm, its twin twin::IpcRank),
// checked on the calling rank and added to the p2p kernel's table of this rank's launch (kernel/p2p.hpp).
// Plain C++17.
//
// Matching is NCCL's: the i-th send a -> b meets the i-th recv at b from a. It needs no host exchange:
// the p2p FIFOs are per (block, source) and their counters live in RankState, so each side's launch
// continues where its last one on that pair stopped, whatever the peer's launches carried. The entry is
// in bytes, so a send and its recv cut the same pieces even if they name the element type differently;
// a count that differs between the two is not detected (as NCCL), and the pair's FIFO is out of step
// from then on.
//
// A send to this rank itself is refused (runtime::check_peer): a send and its recv are separate launches
// here, and a launch that copies needs both buffers (the p2p kernel pairs a self-send with a self-recv only
// within one table, which an IpcComm::group could give; it is refused there too, to keep one rule).
#pragma once

#include <cstddef>

#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../runtime/call_check.hpp"
#include "ipc_calls.hpp"
#include "kernel/p2p_call.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

inline void add_ipc_transfer(kernel::P2pTable& table, const IpcPeerCall& c, const char* call, int rank, int size) {
  const std::size_t bytes = runtime::check_point_to_point(call, rank, size, c.data, c.count, c.type, c.peer);
  int& used = c.sending ? table.send_count : table.recv_count;
  if (used == kernel::kMaxRanks) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "this would be ", c.sending ? "send" : "receive", " number ",
                     kernel::kMaxRanks + 1, " of one group(); a group takes at most ", kernel::kMaxRanks, " of each");
  }
  (c.sending ? table.sends : table.recvs)[used++] = kernel::P2pEntry{c.peer, -1, c.data, bytes};
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
