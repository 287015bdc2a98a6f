// Built schedules, kept so steady-state calls build (and allocate) nothing. Every rank of a
// communicator executes the same schedule, so one copy is shared through a per-communicator
// store (a mutex, taken only on a rank's local miss); each rank keeps a small lock-free list of
// the schedules it used last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../algo/schedule.hpp"

namespace chorus::host::detail {

struct ScheduleKey {
  algo::Collective collective = algo::Collective::all_reduce;
  algo::Pattern pattern = algo::Pattern::ring;
  int ranks = 1;
  std::size_t count = 0;
  int root = 0;
  bool in_place = false;
  std::size_t slice = 0;

  friend bool operator==(const ScheduleKey& a, const ScheduleKey& b) {
    return a.collective == b.collective && a.pattern == b.pattern && a.ranks == b.ranks && a.count == b.count &&
           a.root == b.root && a.in_place == b.in_place && a.slice == b.slice;
  }
};

using SchedulePtr = std::shared_ptr<const algo::Schedule>;

// Least-recently-used list of at most `capacity` schedules.
class ScheduleList {
 public:
  explicit ScheduleList(std::size_t capacity) : capacity_(capacity) {}

  const SchedulePtr* find(const ScheduleKey& key) {
    for (Entry& entry : entries_) {
      if (entry.key == key) {
        entry.used = ++clock_;
        return &entry.schedule;
      }
    }
    return nullptr;
  }

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

class ScheduleStore {
 public:
  static constexpr std::size_t kCapacity = 32;

  // `build()` returns an algo::Schedule; it runs under the lock so a schedule is built once.
  template <class Build>
  SchedulePtr get(const ScheduleKey& key, Build&& build) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const SchedulePtr* found = list_.find(key)) return *found;
    return list_.insert(key, std::make_shared<const algo::Schedule>(build()));
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    list_.clear();
  }

 private:
  std::mutex mutex_;
  ScheduleList list_{kCapacity};
};

class ScheduleCache {
 public:
  static constexpr std::size_t kCapacity = 8;

  template <class Build>
  const algo::Schedule& get(const ScheduleKey& key, ScheduleStore& store, Build&& build) {
    if (const SchedulePtr* found = list_.find(key)) return **found;
    return *list_.insert(key, store.get(key, std::forward<Build>(build)));
  }

 private:
  ScheduleList list_{kCapacity};
};

}  // namespace chorus::host::detail
