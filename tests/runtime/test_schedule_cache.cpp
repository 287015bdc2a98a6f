// The schedule cache: a schedule is built once per communicator however many ranks ask, a rank's
// repeated calls find it without the store, and when full, exactly the least recently used entry
// makes room (both in a rank's cache and in the communicator's store).
#include <catch2/catch.hpp>

#include <chorus/runtime/schedule_cache.hpp>

#include <cstddef>

namespace test_schedule_cache {

using chorus::Collective;
using chorus::algo::Pattern;
using chorus::runtime::ScheduleCache;
using chorus::runtime::ScheduleKey;
using chorus::runtime::ScheduleStore;

namespace {

ScheduleKey key(std::size_t count) {
  ScheduleKey k;
  k.collective = Collective::all_reduce;
  k.pattern = Pattern::ring;
  k.ranks = 3;
  k.count = count;
  return k;
}

}  // namespace

TEST_CASE("ranks share one built schedule and find it again locally", "[schedule_cache]") {
  ScheduleStore store;
  ScheduleCache rank0, rank1;
  const chorus::algo::Schedule& a = rank0.get(key(10), store);
  const chorus::algo::Schedule& b = rank1.get(key(10), store);
  const chorus::algo::Schedule& c = rank0.get(key(10), store);
  CHECK(store.builds() == 1);
  CHECK(&a == &b);
  CHECK(&a == &c);
  CHECK(a.count == 10);
  CHECK(a.ranks == 3);
  // Any differing field is a different schedule, built from the key.
  ScheduleKey other = key(10);
  other.in_place = true;
  const chorus::algo::Schedule& d = rank0.get(other, store);
  CHECK(store.builds() == 2);
  CHECK(d.in_place);
  other = key(10);
  other.pattern = Pattern::tree;
  CHECK(rank0.get(other, store).pattern == Pattern::tree);
  CHECK(store.builds() == 3);
}

TEST_CASE("a rank's cache evicts exactly the least recently used entry", "[schedule_cache]") {
  ScheduleStore store;
  ScheduleCache cache;
  const std::size_t capacity = ScheduleCache::kCapacity;
  for (std::size_t count = 1; count <= capacity; ++count) cache.get(key(count), store);
  REQUIRE(cache.size() == capacity);
  cache.get(key(1), store);  // now key(2) is the least recently used
  cache.get(key(capacity + 1), store);
  CHECK(cache.size() == capacity);  // something was evicted...
  CHECK_FALSE(cache.contains(key(2)));  // ...and it was key(2)
  CHECK(cache.contains(key(1)));
  CHECK(cache.contains(key(capacity + 1)));
  for (std::size_t count = 3; count <= capacity; ++count) CHECK(cache.contains(key(count)));
  // A local miss is served by the store without a new build.
  const std::size_t builds = store.builds();
  CHECK(cache.get(key(2), store).count == 2);
  CHECK(store.builds() == builds);
  CHECK_FALSE(cache.contains(key(3)));  // the next oldest made room
}

TEST_CASE("the store evicts its least recently used schedule and rebuilds it on demand", "[schedule_cache]") {
  ScheduleStore store;
  const std::size_t capacity = ScheduleStore::kCapacity;
  for (std::size_t count = 1; count <= capacity; ++count) store.get(key(count));
  CHECK(store.builds() == capacity);
  store.get(key(1));  // a hit: key(2) becomes the oldest
  CHECK(store.builds() == capacity);
  store.get(key(capacity + 1));  // evicts key(2)
  CHECK(store.builds() == capacity + 1);
  store.get(key(1));  // still held
  CHECK(store.builds() == capacity + 1);
  store.get(key(2));  // was evicted: built again
  CHECK(store.builds() == capacity + 2);
  CHECK(store.get(key(2))->count == 2);
}

TEST_CASE("a new ring order drops every schedule built with the old one", "[schedule_cache]") {
  ScheduleStore store;
  const auto before = store.get(key(9));
  store.set_ring_order({0, 2, 1});
  const auto after = store.get(key(9));
  CHECK(store.builds() == 2);
  CHECK(before != after);
  CHECK(store.ring_order() == std::vector<int>{0, 2, 1});
  // A ring rank first sends to its successor: rank 1 in order 0,1,2, rank 2 in order 0,2,1.
  CHECK(before->steps[0].front().peer == 1);
  CHECK(after->steps[0].front().peer == 2);
}

}  // namespace test_schedule_cache
