// Checks a transfer call (every rank's transfers at once) and turns it into each rank's P2pTable, shared
// by the CPU twin's Team and cuda::Team so both refuse the same calls with the same chorus::Error: the
// call, the rank and the bad value. Host code only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/p2p_call.hpp"
#include "transfer.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

namespace detail_transfer {

struct Span {
  std::uintptr_t begin;
  std::uintptr_t end;
  std::size_t transfer;  // its index in the call
};
inline bool overlap(Span a, Span b) { return a.begin < b.end && b.begin < a.end; }

}  // namespace detail_transfer

// Refuses: a rank out of range, a byte size that overflows, a null buffer with count > 0, more than
// kMaxRanks sends or receives on one rank (the kernel's table is fixed-size), and a receive buffer that
// overlaps another transfer's receive buffer or any send buffer of the call (the transfers run
// concurrently, so the result would depend on timing). Transfers of count 0 are kept (they move nothing).
template <class T>
std::vector<kernel::P2pTable> plan_transfers(const char* call, int ranks, const std::vector<Transfer<T>>& transfers) {
  using detail_transfer::Span;
  std::vector<kernel::P2pTable> tables(static_cast<std::size_t>(ranks), kernel::P2pTable{});
  std::vector<Span> recvs, sends;
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Transfer<T>& t = transfers[i];
    if (t.from < 0 || t.from >= ranks) {
      throw make_error(ErrorCode::invalid_argument, call, t.from, "transfer ", i, " sends from rank ", t.from, ", not a rank of ", ranks);
    }
    if (t.to < 0 || t.to >= ranks) {
      throw make_error(ErrorCode::invalid_argument, call, t.from, "transfer ", i, " sends to rank ", t.to, ", not a rank of ", ranks);
    }
    if (t.count > SIZE_MAX / sizeof(T)) {
      throw make_error(ErrorCode::invalid_argument, call, t.from, "transfer ", i, ": count ", t.count, " overflows the byte size");
    }
    if (t.count > 0 && t.send == nullptr) {
      throw make_error(ErrorCode::invalid_argument, call, t.from, "transfer ", i, ": null send buffer with count ", t.count);
    }
    if (t.count > 0 && t.recv == nullptr) {
      throw make_error(ErrorCode::invalid_argument, call, t.to, "transfer ", i, ": null recv buffer with count ", t.count);
    }
    kernel::P2pTable& sender = tables[static_cast<std::size_t>(t.from)];
    kernel::P2pTable& receiver = tables[static_cast<std::size_t>(t.to)];
    if (sender.send_count == kernel::kMaxRanks) {
      throw make_error(ErrorCode::invalid_argument, call, t.from, "transfer ", i, " is this rank's send number ", kernel::kMaxRanks + 1,
                       "; one call takes at most ", kernel::kMaxRanks, " sends and ", kernel::kMaxRanks, " receives per rank");
    }
    if (receiver.recv_count == kernel::kMaxRanks) {
      throw make_error(ErrorCode::invalid_argument, call, t.to, "transfer ", i, " is this rank's receive number ", kernel::kMaxRanks + 1,
                       "; one call takes at most ", kernel::kMaxRanks, " sends and ", kernel::kMaxRanks, " receives per rank");
    }
    sender.sends[sender.send_count++] = kernel::P2pEntry{t.to, -1, t.send, t.count};
    receiver.recvs[receiver.recv_count++] = kernel::P2pEntry{t.from, -1, t.recv, t.count};
    const std::size_t bytes = t.count * sizeof(T);
    const auto send_at = reinterpret_cast<std::uintptr_t>(t.send);
    const auto recv_at = reinterpret_cast<std::uintptr_t>(t.recv);
    if (bytes == 0) continue;
    sends.push_back(Span{send_at, send_at + bytes, i});
    recvs.push_back(Span{recv_at, recv_at + bytes, i});
  }
  for (const Span& recv : recvs) {
    for (std::size_t j = 0; j < sends.size(); ++j) {
      const bool with_recv = recvs[j].transfer != recv.transfer && detail_transfer::overlap(recv, recvs[j]);
      if (!with_recv && !detail_transfer::overlap(recv, sends[j])) continue;
      const Transfer<T>& t = transfers[recv.transfer];
      throw make_error(ErrorCode::invalid_argument, call, t.to, "transfer ", recv.transfer, "'s recv buffer ",
                       static_cast<const void*>(t.recv), " overlaps the ", with_recv ? "recv" : "send", " buffer of transfer ",
                       sends[j].transfer, " (the transfers of a call run concurrently)");
    }
  }
  return tables;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
