// One rank's part of a transfer call as the p2p kernel body takes it: a small fixed-size table of this
// rank's sends and receives (at most kMaxRanks each way; the host refuses more before launching), small
// enough that every rank's table travels in the launch's parameters (8 ranks: about 3 KiB).
#pragma once

#include <cstddef>

#include "../../core/config.hpp"
#include "rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

struct P2pEntry {
  int peer;            // sends: the receiver; receives: the sender (== this rank: a local copy)
  int after_send;      // receives only: a send entry of this table whose piece p must leave before piece p
                       // lands here (in-place pairwise all_to_all: the two share a buffer); -1: none
  const void* buffer;  // sends: the source; receives: the destination
  std::size_t count;   // elements
};

// Entries between the same ordered pair keep the call's list order on both sides: the sender fills the
// pair's FIFO with them in that order and the receiver drains it in the same order. A local copy is a
// send to itself and a receive from itself; the k-th of each are paired.
struct P2pTable {
  int send_count;
  int recv_count;
  P2pEntry sends[kMaxRanks];
  P2pEntry recvs[kMaxRanks];
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
