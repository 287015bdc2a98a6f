// Building a process group's Transport: shm::Comm through torch's store (any launcher, one machine),
// or, in a build with MPI (CHORUS_TORCH_WITH_MPI), mpi::Comm over the group's ranks of MPI_COMM_WORLD
// (a job started by mpirun; torch's ranks must be MPI's).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chorus/shm.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "links.hpp"
#include "store_bridge.hpp"
#include "transport.hpp"

#ifdef CHORUS_TORCH_WITH_MPI
#include <chorus/mpi.hpp>
#endif

namespace chorus_torch {

inline std::unique_ptr<Transport> shm_transport(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                long timeout_ms) {
  StoreBridge bridge(store, rank);
  chorus::shm::Options options;
  options.timeout_ms = timeout_ms;
  options.key = "chorus/shm";  // the store is already the group's own (torch prefixes it)
  return std::make_unique<TransportOf<chorus::shm::Comm>>(chorus::shm::Comm(bridge, rank, size, options), "shm");
}

// Point-to-point links over shm (links.hpp): the link from rank A to rank B is a 2-rank shm::Comm
// (A is its rank 0) found through the group's store under "chorus/p2p/A-B", made by each end's link
// thread at its first message in that direction. Only pairs that exchange messages get one. Both
// ends first count themselves in under that key and poll the count (1 to 20 ms apart) until both are
// there: shm::Comm's own setup waits cannot be interrupted, and this wait must end at abort().
inline constexpr const char* kLinksAborted = "chorus/p2p/aborted";

inline LinkFactory shm_links(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  LinkFactory links;
  links.announce_abort = [store, rank](const std::string& why) {
    try {
      StoreBridge(store, rank).set(kLinksAborted, "rank " + std::to_string(rank) + ": " + why);
    } catch (const chorus::Error&) {
      // the store is gone: the links being made end at their timeout
    }
  };
  links.make = [store, rank](int peer, bool sends, long timeout_ms, const std::function<bool()>& aborted)
      -> std::unique_ptr<Transport> {
    const char* call = sends ? "send" : "recv";
    const std::string key = "chorus/p2p/" + std::to_string(sends ? rank : peer) + "-" + std::to_string(sends ? peer : rank);
    StoreBridge bridge(store, rank);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    // Polls `ready` (a store call that does not block) until it holds, an abort, or the deadline.
    auto poll = [&](auto&& ready, const char* what) {
      for (auto pause = std::chrono::milliseconds(1); !ready(); pause = std::min(pause * 2, std::chrono::milliseconds(20))) {
        if (aborted()) {
          throw chorus::make_error(chorus::ErrorCode::peer_failed, call, chorus::RankName(rank),
                                   "the process group was aborted while this rank waited for rank ", peer, what);
        }
        if (bridge.check({kLinksAborted})) {
          throw chorus::make_error(chorus::ErrorCode::peer_failed, call, chorus::RankName(rank), "released because ",
                                   bridge.get(kLinksAborted), " (while this rank waited for rank ", peer, what, ")");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
          throw chorus::make_error(chorus::ErrorCode::timeout, call, chorus::RankName(rank), "waited ", timeout_ms,
                                   " ms for rank ", peer, what, " (the call's timeout)");
        }
        std::this_thread::sleep_for(pause);
      }
    };
    bridge.add(key + "/arrived", 1);
    poll([&] { return bridge.add(key + "/arrived", 0) >= 2; },
         sends ? " to receive the first message between them" : " to send the first message between them");
    // torch's TCPStore client blocks all of a process's store calls while one of its threads waits in
    // get(): so the receiver (shm::Comm's rank 1, which gets the segment's name) polls for the name first.
    if (!sends) poll([&] { return bridge.check({key}); }, " to publish their link's shared memory");
    chorus::shm::Options options;
    options.timeout_ms = timeout_ms;
    options.key = key;
    return std::make_unique<TransportOf<chorus::shm::Comm>>(chorus::shm::Comm(bridge, sends ? 0 : 1, 2, options), "shm");
  };
  return links;
}

inline constexpr bool kHasMpi =
#ifdef CHORUS_TORCH_WITH_MPI
    true;
#else
    false;
#endif

#ifdef CHORUS_TORCH_WITH_MPI
// MPI_Init_thread(MULTIPLE) unless MPI is up already; finalize_mpi() ends it at exit if this did.
inline bool& mpi_started_here() {
  static bool started = false;
  return started;
}

inline void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (mpi_started_here() && !finalized) MPI_Finalize();
}

// `global_ranks`: the group's ranks in torch's default group, which must be MPI_COMM_WORLD's.
inline std::unique_ptr<Transport> mpi_transport(int rank, int size, const std::vector<std::int64_t>& global_ranks) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    mpi_started_here() = true;
  }
  int world_rank = -1;
  int world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  std::vector<int> ranks;
  for (const std::int64_t r : global_ranks) ranks.push_back(static_cast<int>(r));
  if (ranks.empty()) {
    for (int r = 0; r < size; ++r) ranks.push_back(r);
  }
  if (static_cast<int>(ranks.size()) != size || ranks[static_cast<std::size_t>(rank)] != world_rank) {
    throw chorus::make_error(chorus::ErrorCode::invalid_argument, "chorus_torch (mpi transport)", chorus::RankName(rank),
                             "torch's rank ", ranks.empty() ? -1 : ranks[static_cast<std::size_t>(rank)],
                             " is MPI rank ", world_rank, ": launch with RANK=$OMPI_COMM_WORLD_RANK (docs/torch.md), "
                             "or set CHORUS_TORCH_TRANSPORT=shm");
  }
  bool whole_world = size == world_size;
  for (int r = 0; whole_world && r < size; ++r) whole_world = ranks[static_cast<std::size_t>(r)] == r;
  if (whole_world) return std::make_unique<TransportOf<chorus::mpi::Comm>>(chorus::mpi::Comm(MPI_COMM_WORLD), "mpi");
  // Only a group's members call torch's creator, so the group's communicator is made by them alone.
  MPI_Group world_group = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, size, ranks.data(), &group);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  auto transport = std::make_unique<TransportOf<chorus::mpi::Comm>>(chorus::mpi::Comm(comm), "mpi");
  MPI_Comm_free(&comm);  // chorus::mpi::Comm holds its own duplicate
  return transport;
}
#endif

}  // namespace chorus_torch
