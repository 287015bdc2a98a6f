// The ring orders a team's ring and chain kernels run on, one per channel ring (block b of every rank on
// ring b % rings): the caller's are checked here, and every backend fills its views from them here, so
// cuda::Team, the CPU twin and IpcComm agree on what a ring table holds. Host code only.
#pragma once

#include <cstddef>
#include <numeric>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "kernel/rank_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// Each order is position -> rank, a permutation of 0..n-1.
using RingOrders = std::vector<std::vector<int>>;

// One ring, 0, 1, ..., n-1: virtual ranks on one GPU, where every link is the same.
inline RingOrders identity_ring_orders(int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return RingOrders{order};
}

// Refuses orders that are not 1..kMaxRings permutations of 0..n-1, naming the call, the ring and the
// bad value. (Empty is for the caller to resolve before: it means "derive them".)
inline void check_ring_orders(const char* call, const RingOrders& orders, int n) {
  if (orders.empty() || orders.size() > static_cast<std::size_t>(kernel::kMaxRings)) {
    throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ring_orders must hold 1..", kernel::kMaxRings,
                                                             " rings, got ", orders.size()));
  }
  for (std::size_t k = 0; k < orders.size(); ++k) {
    const std::vector<int>& order = orders[k];
    if (order.size() != static_cast<std::size_t>(n)) {
      throw Error(ErrorCode::invalid_argument, detail::concat("chorus::", call, ": ring_orders[", k, "] has ", order.size(),
                                                               " entries for ", n, " ranks"));
    }
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (std::size_t p = 0; p < order.size(); ++p) {
      const int rank = order[p];
      if (rank < 0 || rank >= n || seen[static_cast<std::size_t>(rank)]) {
        throw Error(ErrorCode::invalid_argument,
                    detail::concat("chorus::", call, ": ring_orders[", k, "] must be a permutation of 0..", n - 1, ": entry ", p,
                                   " is ", rank, rank < 0 || rank >= n ? " (not a rank)" : " (repeated)"));
      }
      seen[static_cast<std::size_t>(rank)] = true;
    }
  }
}

// Fills view.rings and view.ring_table with view.rank's place on each (checked) order.
inline void fill_rings(kernel::RankView& view, const RingOrders& orders) {
  view.rings = static_cast<int>(orders.size());
  for (std::size_t k = 0; k < orders.size(); ++k) {
    view.ring_table[k] = kernel::make_ring_view(orders[k].data(), view.nranks, view.rank);
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
