// Before an IpcComm frees its signals: wait until no peer will write into them again.
//
// A rank's kernel ends as soon as it has what it needs, but the FIFO protocols (kernel/ring.hpp,
// tree.hpp, p2p) end each transfer with the receiver handing the slot back: a release-store of its
// consumed count into the *sender's* signals (fifo_tail, tree_tail, p2p_tail). The sender does not wait
// for the credits of its last slots, so its kernel can end, and its destructor free its signals, while a
// slower receiver is still about to write one. On a GPU that store lands in freed device memory (another
// allocation's, or an unmapped page: an illegal-address fault in the peer's kernel); the CPU twin showed
// it as a heap-use-after-free under AddressSanitizer. Every other word peers write here (start/end
// barrier flags, FIFO heads) is one this rank waited for before its kernel ended.
//
// So the destructor, once its own work is done, waits (bounded) until every credit it is owed has
// arrived: each tail equal to the count this rank sent on that link, read from its own RankState.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "kernel/rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// True once every credit owed to `rank` has arrived in `signals` (or there is nothing owed), false when
// `bound` passed first (a peer that failed or was aborted before consuming what it was sent).
template <class Device>
bool wait_for_peer_credits(const Device& device, const kernel::Signals* signals, const kernel::RankState* state,
                           int blocks, int rank, int nranks, std::chrono::milliseconds bound, const char* call) {
  struct Owed {
    const std::uint32_t* tail;  // the word in this rank's signals a peer writes its consumed count into
    std::uint32_t sent;         // what this rank sent on that link (counters wrap; equality is the test)
  };
  std::vector<Owed> owed;
  const auto add = [&](const std::uint32_t* tail, const std::uint32_t* sent) {
    owed.push_back({tail, device.read_word(sent, call, rank)});
  };
  for (int b = 0; b < blocks && b < kernel::kMaxBlocks; ++b) {
    add(&signals->fifo_tail[b], &state->block[b].fifo_sent);
    for (int t = 0; t < kernel::kTrees; ++t) {
      for (int l = 0; l < kernel::kTreeLinks; ++l) add(&signals->tree_tail[b][t][l], &state->tree[b].sent[t][l]);
    }
    for (int peer = 0; peer < nranks && peer < kernel::kMaxRanks; ++peer) {
      if (peer != rank) add(&signals->p2p_tail[b][peer], &state->p2p[b].sent[peer]);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    std::vector<Owed> still;
    for (const Owed& o : owed) {
      if (device.read_word(o.tail, call, rank) != o.sent) still.push_back(o);
    }
    if (still.empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    owed = std::move(still);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
