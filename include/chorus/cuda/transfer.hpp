// One point-to-point transfer of a team call: rank `from` sends `count` elements at `send`, rank `to`
// receives them at `recv`. A list of them is one call (cuda::Team::transfer, twin::Team::transfer): every
// transfer runs concurrently in one launch, so a rank may send to one peer while it receives from another
// (a pipeline stage, a ring exchange) without either side waiting for the other's call. Plain C++ (no
// CUDA): host code builds the lists.
//
//   std::vector<chorus::cuda::Transfer<float>> ring;
//   for (int r = 0; r < n; ++r) ring.push_back({r, (r + 1) % n, send[r], recv[(r + 1) % n], count});
//   team.transfer(ring);
#pragma once

#include <cstddef>

#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

template <class T>
struct Transfer {
  int from;           // the sending rank
  int to;             // the receiving rank (== from: a local copy)
  const T* send;      // `count` elements on `from`
  T* recv;            // `count` elements on `to`
  std::size_t count;  // elements
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
