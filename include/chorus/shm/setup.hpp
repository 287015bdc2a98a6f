// Building a shared-memory communicator: rank 0 (of the job, or of a split's group) creates the
// segment and publishes its name (through a Store, or through the parent communicator for split);
// every other rank opens it and checks in (writes its pid, counts itself mapped); rank 0 waits until
// all have, unlinks the name and marks the segment ready; the others wait for that. Every wait is
// bounded by the communicator's timeout, and a rank that never comes is named in the error.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../bootstrap/store.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "endpoint.hpp"
#include "layout.hpp"
#include "options.hpp"
#include "segment.hpp"

CHORUS_NAMESPACE_BEGIN namespace shm::detail {

inline unsigned next_comm_number() {
  static std::atomic<unsigned> created{0};
  return created.fetch_add(1);
}

// The creator's communicator number in a segment name "/chorus-<pid>-<number>-<random>" (the same on
// every rank: flight-record dumps are named by it).
inline std::uint32_t comm_number(const std::string& name) {
  unsigned pid = 0, number = 0;
  return std::sscanf(name.c_str(), "/chorus-%u-%u-", &pid, &number) == 2 ? number : 0;
}

inline SegmentPtr create_segment(int ranks, const Options& options, const char* call, int rank) {
  return std::make_shared<Segment>(
      Segment::create(Layout(ranks, options.slot_bytes, options.slots), next_comm_number(), call, rank));
}

inline SegmentPtr open_segment(const std::string& name, int ranks, const char* call, int rank) {
  Segment segment = Segment::open(name, ranks, call, rank);
  if (!segment) {
    throw make_error(ErrorCode::peer_failed, call, rank, "the shared-memory segment ", name,
                     " is gone: its creator (rank 0 of this group) died or gave up");
  }
  return std::make_shared<Segment>(std::move(segment));
}

inline RankControl& control_of(Segment& segment, int rank) {
  const Layout layout(segment.header().ranks, segment.header().slot_bytes, segment.header().slots);
  return reinterpret_cast<RankControl*>(segment.base() + layout.rank_control)[rank];
}

// Polls `done` every millisecond until it is true or `timeout_ms` has passed (then false).
template <class Done>
bool poll_until(long timeout_ms, Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// This rank's check-in; rank 0 also waits for everyone, unlinks the name and marks the segment ready.
inline void check_in(Segment& segment, int rank, long timeout_ms, const char* call) {
  Header& h = segment.header();
  const int ranks = h.ranks;
  RankControl& mine = control_of(segment, rank);
  std::int32_t none = 0;
  mine.pid_namespace = pid_namespace();  // before the pid: peers read it once the pid is there
  if (!mine.pid.compare_exchange_strong(none, static_cast<std::int32_t>(::getpid()))) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "rank ", rank, " has already joined (pid ", none,
                     "): two processes were started with the same RANK");
  }
  h.mapped.fetch_add(1, std::memory_order_acq_rel);
  if (rank == 0) {
    const bool all = poll_until(timeout_ms, [&] { return h.mapped.load(std::memory_order_acquire) == ranks; });
    segment.unlink();  // joined or not, the name goes now
    if (!all) {
      std::string missing;
      for (int r = 0; r < ranks; ++r) {
        if (control_of(segment, r).pid.load(std::memory_order_acquire) == 0) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      h.failed.store(1, std::memory_order_release);  // a late joiner must not wait for a ready that never comes
      throw make_error(ErrorCode::timeout, call, rank, "waited ", timeout_ms, " ms for every rank to join; rank ",
                       missing, " never did (not started, wrong WORLD_SIZE, or another store)");
    }
    h.ready.store(1, std::memory_order_release);
    return;
  }
  const bool ready = poll_until(timeout_ms, [&] {
    return h.ready.load(std::memory_order_acquire) != 0 || h.failed.load(std::memory_order_acquire) != 0 ||
           !creator_alive(h);
  });
  if (!ready || h.ready.load(std::memory_order_acquire) == 0) {
    throw make_error(ready ? ErrorCode::peer_failed : ErrorCode::timeout, call, rank,
                     ready ? "rank 0 gave up or died before every rank joined"
                           : chorus::detail::concat("waited ", timeout_ms, " ms for every rank to join"));
  }
}

// The constructor's part: the segment every rank of the job maps, found through `store`.
inline SegmentPtr join(bootstrap::Store& store, int rank, int size, const Options& options) {
  const char* call = "shm::Comm";
  if (size < 1 || rank < 0 || rank >= size) {
    throw make_error(ErrorCode::invalid_argument, call, rank, "rank ", rank, " of ", size,
                     " processes: the rank must be in [0, size) (check RANK and WORLD_SIZE)");
  }
  check_options(options, call, rank);
  const long timeout_ms = timeout_of(options);
  const std::string key = options.key.empty() ? "chorus/shm/" + std::to_string(next_comm_number()) : options.key;
  if (rank == 0) {
    SegmentPtr segment = create_segment(size, options, call, rank);
    store.set(key, segment->name());
    check_in(*segment, rank, timeout_ms, call);
    return segment;
  }
  // A name still in the store from a job killed during setup belongs to a dead creator: Segment::open
  // unlinks it and returns nothing, and this rank asks again until rank 0 of this job has published.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const std::string name = store.get(key);
    Segment segment = Segment::open(name, size, call, rank);
    if (segment) {
      auto shared = std::make_shared<Segment>(std::move(segment));
      check_in(*shared, rank, timeout_ms, call);
      return shared;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw make_error(ErrorCode::timeout, call, rank, "waited ", timeout_ms, " ms for rank 0 to publish a live segment under store key '",
                       key, "' (last seen: '", name, "', whose creator is gone)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Where this rank goes in split(color, key): its rank and size in the new group, and the old rank of
// the group's rank 0.
struct GroupPlan {
  int rank = -1;
  int size = 0;
  int leader = -1;
};

template <class Comm>
GroupPlan plan_split(Comm& comm, int color, int key) {
  const std::int32_t mine[2] = {color, key};
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(comm.size()));
  comm.all_gather(mine, all.data(), 2);
  std::vector<std::tuple<int, int>> group;  // (key, old rank)
  for (int r = 0; r < comm.size(); ++r) {
    if (all[2 * static_cast<std::size_t>(r)] == color) group.emplace_back(all[2 * static_cast<std::size_t>(r) + 1], r);
  }
  std::sort(group.begin(), group.end());
  GroupPlan plan;
  if (color < 0) return plan;
  plan.size = static_cast<int>(group.size());
  plan.leader = std::get<1>(group.front());
  for (int i = 0; i < plan.size; ++i) {
    if (std::get<1>(group[static_cast<std::size_t>(i)]) == comm.rank()) plan.rank = i;
  }
  return plan;
}

// Every rank's `name` (at most 127 bytes), in rank order.
template <class Comm>
std::vector<std::string> share_names(Comm& comm, const std::string& name) {
  constexpr std::size_t kBytes = 128;
  std::uint8_t mine[kBytes] = {};
  std::memcpy(mine, name.data(), std::min(name.size(), kBytes - 1));
  std::vector<std::uint8_t> all(kBytes * static_cast<std::size_t>(comm.size()));
  comm.all_gather(mine, all.data(), kBytes);
  std::vector<std::string> names;
  for (int r = 0; r < comm.size(); ++r) {
    names.emplace_back(reinterpret_cast<const char*>(all.data() + kBytes * static_cast<std::size_t>(r)));
  }
  return names;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::shm::detail
