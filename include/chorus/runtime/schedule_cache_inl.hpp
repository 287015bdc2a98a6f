// build_schedule's body: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by schedule_cache.hpp; not for direct use.
#pragma once

#include <vector>

#include "../algo/build.hpp"
#include "schedule_cache.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

CHORUS_FUNC algo::Schedule build_schedule(const ScheduleKey& key, const std::vector<int>& ring_order) {
  algo::Options options;
  options.slice = key.slice;
  options.in_place = key.in_place;
  options.ring_order = ring_order;
  // No logging here: the backends log a choice and its schedule on a miss, at the level they read when
  // the communicator started, so a build at the default level never reads the environment.
  return algo::build(key.collective, key.pattern, key.ranks, key.count, key.root, options);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
