// build_schedule's body: compiled in every translation unit in header-only mode, once in libchorus
// in compiled mode (core/config.hpp). Included by schedule_cache.hpp; not for direct use.
#pragma once

#include <vector>

#include "../algo/build.hpp"
#include "../core/log.hpp"
#include "schedule_cache.hpp"

namespace chorus::runtime {

CHORUS_FUNC algo::Schedule build_schedule(const ScheduleKey& key, const std::vector<int>& ring_order) {
  algo::Options options;
  options.slice = key.slice;
  options.in_place = key.in_place;
  options.ring_order = ring_order;
  chorus::log(LogLevel::debug, "building ", to_string(key.collective), " schedule, pattern ",
              algo::to_string(key.pattern), ", ", key.ranks, " ranks, count ", key.count,
              key.in_place ? ", in place" : "");
  return algo::build(key.collective, key.pattern, key.ranks, key.count, key.root, options);
}

}  // namespace chorus::runtime
