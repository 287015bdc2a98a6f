// all_to_all as grouped point-to-point transfers (NCCL's way): rank r sends block j of its input to
// rank j and receives rank k's block for it into block k of its output, every pair at once in one launch
// through the p2p body (p2p.hpp). Sends go round the ring from r+1 (receives from r-1), so the ranks do
// not all start on the same peer. In place (input == output) each received piece waits until the piece
// of the same range has left for that peer.
#pragma once

#include "../../core/config.hpp"
#include "collective_call.hpp"
#include "p2p.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::kernel {

CHORUS_HOST_DEVICE inline P2pTable pairwise_table(const RankView& view, const void* input, void* output, std::size_t count,
                                                  std::size_t element_bytes) {
  const int n = view.nranks;
  const int me = view.rank;
  const bool in_place = input == output;
  const auto block_at = [&](const void* base, int rank) {
    return static_cast<const unsigned char*>(base) + static_cast<std::size_t>(rank) * count * element_bytes;
  };
  P2pTable table{};
  for (int k = 0; k < n; ++k) {
    const int to = (me + k) % n;
    const int from = (me + n - k) % n;
    table.sends[table.send_count++] = P2pEntry{to, -1, block_at(input, to), count};
    // The send to `from` is entry (from - me) mod n.
    table.recvs[table.recv_count++] =
        P2pEntry{from, in_place && k > 0 ? (from - me + n) % n : -1, block_at(output, from), count};
  }
  return table;
}

CHORUS_HOST_DEVICE_TEMPLATE
template <class T, class Block>
CHORUS_HOST_DEVICE inline bool pairwise_all_to_all(const Block& block, const RankView& view, const CollectiveCall<T>& call) {
  return p2p<T>(block, view, pairwise_table(view, call.input, call.output, call.count, sizeof(T)));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::kernel
