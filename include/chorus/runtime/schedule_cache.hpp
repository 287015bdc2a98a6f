// Built schedules, kept so steady-state calls build (and allocate) nothing. Every rank of a
// communicator executes the same schedule, so one copy is shared through a per-communicator
// store (a mutex, taken only on a rank's local miss); each rank keeps a small lock-free list of
// the schedules it used last. Both are keyed by the call's ScheduleKey (call_descriptor.hpp), and
// the store builds from the key alone, so what is cached is exactly what the key describes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "call_descriptor.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

using SchedulePtr = std::shared_ptr<const algo::Schedule>;

// The schedule a key describes, with the communicator's ring order (empty: 0, 1, ..., n-1).
CHORUS_FUNC algo::Schedule build_schedule(const ScheduleKey& key, const std::vector<int>& ring_order);

// Least-recently-used list of at most `capacity` schedules.
class ScheduleList {
 public:
  explicit ScheduleList(std::size_t capacity) : capacity_(capacity) {}

  // Finds and marks as just used.
  const SchedulePtr* find(const ScheduleKey& key) {
    for (Entry& entry : entries_) {
      if (entry.key == key) {
        entry.used = ++clock_;
        return &entry.schedule;
      }
    }
    return nullptr;
  }

  // Whether `key` is held, without marking it used.
  bool contains(const ScheduleKey& key) const {
    for (const Entry& entry : entries_) {
      if (entry.key == key) return true;
    }
    return false;
  }

  // Adds `key`, evicting the least recently used entry when full.
  const SchedulePtr& insert(const ScheduleKey& key, SchedulePtr schedule) {
    if (entries_.size() < capacity_) {
      entries_.push_back(Entry{key, std::move(schedule), ++clock_});
      return entries_.back().schedule;
    }
    Entry* oldest = &entries_.front();
    for (Entry& entry : entries_) {
      if (entry.used < oldest->used) oldest = &entry;
    }
    *oldest = Entry{key, std::move(schedule), ++clock_};
    return oldest->schedule;
  }

  std::size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

 private:
  struct Entry {
    ScheduleKey key;
    SchedulePtr schedule;
    std::uint64_t used = 0;
  };
  std::size_t capacity_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
};

// One per communicator: builds each schedule once (under the lock), for every rank.
class ScheduleStore {
 public:
  static constexpr std::size_t kCapacity = 32;

  SchedulePtr get(const ScheduleKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const SchedulePtr* found = list_.find(key)) return *found;
    ++builds_;
    return list_.insert(key, std::make_shared<const algo::Schedule>(build_schedule(key, ring_order_)));
  }

  // Ring and chain patterns place ranks in this order (empty: 0, 1, ..., n-1). Changing it drops
  // every schedule built with the old one; only while no rank is in a call.
  void set_ring_order(std::vector<int> order) {
    std::lock_guard<std::mutex> lock(mutex_);
    ring_order_ = std::move(order);
    list_.clear();
  }
  const std::vector<int>& ring_order() const { return ring_order_; }

  // Schedules built so far (tests: a hit builds nothing).
  std::size_t builds() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return builds_;
  }

 private:
  mutable std::mutex mutex_;
  ScheduleList list_{kCapacity};
  std::vector<int> ring_order_;
  std::size_t builds_ = 0;
};

// One per rank and communicator: the schedules this rank used last.
class ScheduleCache {
 public:
  static constexpr std::size_t kCapacity = 8;

  const algo::Schedule& get(const ScheduleKey& key, ScheduleStore& store) {
    if (const SchedulePtr* found = list_.find(key)) return **found;
    return *list_.insert(key, store.get(key));
  }
  // The same, calling on_miss(schedule) when this rank did not hold it (e.g. to log the choice).
  template <class OnMiss>
  const algo::Schedule& get(const ScheduleKey& key, ScheduleStore& store, OnMiss&& on_miss) {
    if (const SchedulePtr* found = list_.find(key)) return **found;
    const algo::Schedule& built = *list_.insert(key, store.get(key));
    on_miss(built);
    return built;
  }

  bool contains(const ScheduleKey& key) const { return list_.contains(key); }
  std::size_t size() const { return list_.size(); }

 private:
  ScheduleList list_{kCapacity};
};

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime

#if CHORUS_DEFINE_BODIES
#include "schedule_cache_inl.hpp"
#endif
