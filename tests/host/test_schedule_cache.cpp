// The schedule cache: a schedule is built once per communicator however many ranks ask, a rank's
// repeated calls find it without the store, and old entries make room for new ones.
#include <catch2/catch.hpp>

#include <chorus/algo/build.hpp>
#include <chorus/host/schedule_cache.hpp>

using chorus::algo::Collective;
using chorus::algo::Pattern;
using chorus::host::detail::ScheduleCache;
using chorus::host::detail::ScheduleKey;
using chorus::host::detail::ScheduleStore;

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
  int builds = 0;
  const auto build = [&] {
    ++builds;
    return chorus::algo::build(Collective::all_reduce, Pattern::ring, 3, 10, 0);
  };
  const chorus::algo::Schedule& a = rank0.get(key(10), store, build);
  const chorus::algo::Schedule& b = rank1.get(key(10), store, build);
  const chorus::algo::Schedule& c = rank0.get(key(10), store, build);
  CHECK(builds == 1);
  CHECK(&a == &b);
  CHECK(&a == &c);
  CHECK(a.count == 10);
  // Any differing field is a different schedule.
  ScheduleKey other = key(10);
  other.in_place = true;
  rank0.get(other, store, [&] {
    ++builds;
    chorus::algo::Options options;
    options.in_place = true;
    return chorus::algo::build(Collective::all_reduce, Pattern::ring, 3, 10, 0, options);
  });
  CHECK(builds == 2);
}

TEST_CASE("the local cache evicts the least recently used entry", "[schedule_cache]") {
  ScheduleStore store;
  ScheduleCache cache;
  int builds = 0;
  const auto builder = [&](std::size_t count) {
    return [&builds, count] {
      ++builds;
      return chorus::algo::build(Collective::all_reduce, Pattern::ring, 3, count, 0);
    };
  };
  for (std::size_t count = 1; count <= ScheduleCache::kCapacity + 3; ++count) cache.get(key(count), store, builder(count));
  CHECK(builds == static_cast<int>(ScheduleCache::kCapacity) + 3);
  // All still in the store: a local miss costs no build.
  for (std::size_t count = 1; count <= ScheduleCache::kCapacity + 3; ++count) cache.get(key(count), store, builder(count));
  CHECK(builds == static_cast<int>(ScheduleCache::kCapacity) + 3);
  CHECK(cache.get(key(2), store, builder(2)).count == 2);
}
