// A Chrome trace-event file (what CHORUS_TRACE and `01_ring_allreduce --trace` write; what Perfetto and
// chrome://tracing load) read into what a timeline viewer draws:
//   - tracks: one per (pid, tid), named and ordered by the "M" metadata events (process_name,
//     thread_name, thread_sort_index), as Perfetto orders thread tracks;
//   - slices: complete events ("X": ts, dur) and begin/end pairs ("B" then "E" on the same track),
//     each at its nesting depth (0 = outermost), which is the row the viewer stacks it in;
//   - flows: "s" and "f" events with the same id, each end bound to a slice as Perfetto binds them:
//     the start to the deepest slice enclosing it, the finish to the deepest enclosing slice with
//     "bp": "e", else to the next slice that begins on its track.
// Anything that cannot be drawn faithfully is an error naming the event: slices that overlap without
// nesting, an "E" with no open "B", a flow with one end. Other phases (instants, counters) are skipped.
// Tool-local (bench/): the chorus headers never read JSON.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <chorus/core/error.hpp>

namespace trace_timeline {

struct Slice {
  std::string name;
  std::string category;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int depth = 0;
  std::string args;  // the event's args as JSON text, for the picture's tooltip
};

struct Track {
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::string name;  // thread_name, else "thread <tid>"
  std::int64_t sort_index = 0;
  std::vector<Slice> slices;  // by start time, outer before inner
  int rows = 1;               // deepest nesting + 1
};

struct FlowEnd {
  std::size_t track = 0;
  std::size_t slice = 0;   // in its track's slices
  std::int64_t at_ns = 0;  // where the arrow touches it: the event's time, or the slice's start when bound to the next one
};

struct Flow {
  FlowEnd from;
  FlowEnd to;
};

struct Timeline {
  std::string process;  // the first process_name, if any
  std::vector<Track> tracks;
  std::vector<Flow> flows;
  std::int64_t begin_ns = 0;  // the earliest slice start
  std::int64_t end_ns = 0;    // the latest slice end
  std::size_t slice_count() const {
    std::size_t n = 0;
    for (const Track& track : tracks) n += track.slices.size();
    return n;
  }
};

namespace detail {

using Json = nlohmann::json;

inline chorus::Error bad(std::size_t index, const std::string& what) {
  return chorus::Error(chorus::ErrorCode::invalid_argument, "trace event " + std::to_string(index) + ": " + what);
}

// Trace-event times are microseconds (fractions allowed); the timeline keeps whole nanoseconds so a
// slice printed nested stays nested.
inline std::int64_t micros_to_ns(const Json& event, const char* key, std::size_t index) {
  const auto found = event.find(key);
  if (found == event.end() || !found->is_number()) throw bad(index, std::string("\"") + key + "\" must be a number");
  const double us = found->get<double>();
  if (!std::isfinite(us) || std::fabs(us) > 9.0e12) throw bad(index, std::string("\"") + key + "\" is out of range");
  return std::llround(us * 1000.0);
}

inline std::int64_t integer_field(const Json& event, const char* key, std::size_t index) {
  const auto found = event.find(key);
  if (found == event.end()) return 0;  // chrome://tracing defaults pid and tid to 0
  if (!found->is_number_integer()) throw bad(index, std::string("\"") + key + "\" must be an integer");
  return found->get<std::int64_t>();
}

inline std::string string_field(const Json& event, const char* key) {
  const auto found = event.find(key);
  return found != event.end() && found->is_string() ? found->get<std::string>() : std::string();
}

// The deepest slice of `track` that encloses `at` (of two at one depth, the one beginning there, not
// the one ending there), or slices.size() when none does. The slices are in start order.
inline std::size_t enclosing(const Track& track, std::int64_t at) {
  std::size_t best = track.slices.size();
  for (std::size_t i = 0; i < track.slices.size(); ++i) {
    const Slice& s = track.slices[i];
    if (s.start_ns <= at && at <= s.end_ns && (best == track.slices.size() || s.depth >= track.slices[best].depth)) best = i;
  }
  return best;
}

// The first slice that begins at or after `at` (outermost first), or slices.size().
inline std::size_t next_beginning(const Track& track, std::int64_t at) {
  for (std::size_t i = 0; i < track.slices.size(); ++i) {
    if (track.slices[i].start_ns >= at) return i;
  }
  return track.slices.size();
}

// Orders the track's slices and gives each its depth; throws if two overlap without nesting.
inline void nest(Track& track) {
  std::stable_sort(track.slices.begin(), track.slices.end(), [](const Slice& a, const Slice& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<const Slice*> open;
  for (Slice& slice : track.slices) {
    // A slice starting where an open one ends follows it, unless it is an instant at that very end.
    const bool instant = slice.end_ns == slice.start_ns;
    while (!open.empty() && (open.back()->end_ns < slice.start_ns || (open.back()->end_ns == slice.start_ns && !instant))) {
      open.pop_back();
    }
    if (!open.empty() && slice.end_ns > open.back()->end_ns) {
      throw chorus::Error(chorus::ErrorCode::invalid_argument,
                          "on track \"" + track.name + "\", slice \"" + slice.name + "\" (" + std::to_string(slice.start_ns) +
                              " to " + std::to_string(slice.end_ns) + " ns) overlaps \"" + open.back()->name + "\" (" +
                              std::to_string(open.back()->start_ns) + " to " + std::to_string(open.back()->end_ns) +
                              " ns) without nesting inside it");
    }
    slice.depth = static_cast<int>(open.size());
    track.rows = std::max(track.rows, slice.depth + 1);
    open.push_back(&slice);
  }
}

}  // namespace detail

// Throws chorus::Error (invalid_argument) naming the first event that cannot be drawn.
inline Timeline read(const nlohmann::json& document) {
  using detail::bad;
  using detail::Json;
  const Json* events = &document;
  if (document.is_object()) {
    const auto found = document.find("traceEvents");
    if (found == document.end() || !found->is_array()) {
      throw chorus::Error(chorus::ErrorCode::invalid_argument, "the file has no \"traceEvents\" array");
    }
    events = &*found;
  } else if (!document.is_array()) {
    throw chorus::Error(chorus::ErrorCode::invalid_argument, "a trace is a JSON object with \"traceEvents\", or an array of events");
  }

  Timeline timeline;
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> track_of;  // (pid, tid) -> index
  const auto track_at = [&](std::int64_t pid, std::int64_t tid) -> Track& {
    const auto key = std::make_pair(pid, tid);
    auto found = track_of.find(key);
    if (found == track_of.end()) {
      Track track;
      track.pid = pid;
      track.tid = tid;
      track.sort_index = tid;
      found = track_of.emplace(key, timeline.tracks.size()).first;
      timeline.tracks.push_back(track);
    }
    return timeline.tracks[found->second];
  };
  struct Open {
    std::size_t index;
    Slice slice;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Open>> begun;  // open "B" events per track
  struct PendingFlow {
    std::size_t index = 0;
    std::int64_t pid = 0, tid = 0, at_ns = 0;
    bool bind_enclosing = true;
  };
  std::map<std::string, PendingFlow> starts, finishes;  // by category and id

  for (std::size_t i = 0; i < events->size(); ++i) {
    const Json& event = (*events)[i];
    if (!event.is_object()) throw bad(i, "an event must be a JSON object");
    const std::string phase = detail::string_field(event, "ph");
    if (phase.empty()) throw bad(i, "\"ph\" (the phase) is missing");
    const std::int64_t pid = detail::integer_field(event, "pid", i);
    const std::int64_t tid = detail::integer_field(event, "tid", i);
    if (phase == "M") {
      const std::string what = detail::string_field(event, "name");
      const auto args = event.find("args");
      if (args == event.end() || !args->is_object()) continue;
      if (what == "process_name" && args->contains("name") && (*args)["name"].is_string() && timeline.process.empty()) {
        timeline.process = (*args)["name"].get<std::string>();
      } else if (what == "thread_name" && args->contains("name") && (*args)["name"].is_string()) {
        track_at(pid, tid).name = (*args)["name"].get<std::string>();
      } else if (what == "thread_sort_index" && args->contains("sort_index") && (*args)["sort_index"].is_number_integer()) {
        track_at(pid, tid).sort_index = (*args)["sort_index"].get<std::int64_t>();
      }
      continue;
    }
    if (phase == "X" || phase == "B" || phase == "E") {
      Slice slice;
      slice.name = detail::string_field(event, "name");
      slice.category = detail::string_field(event, "cat");
      const auto args = event.find("args");
      if (args != event.end()) slice.args = args->dump();
      const std::int64_t at = detail::micros_to_ns(event, "ts", i);
      auto& open = begun[std::make_pair(pid, tid)];
      if (phase == "X") {
        const std::int64_t duration = detail::micros_to_ns(event, "dur", i);
        if (duration < 0) throw bad(i, "\"dur\" is negative");
        slice.start_ns = at;
        slice.end_ns = at + duration;
        track_at(pid, tid).slices.push_back(slice);
      } else if (phase == "B") {
        slice.start_ns = at;
        track_at(pid, tid);
        open.push_back({i, slice});
      } else {
        if (open.empty()) throw bad(i, "\"E\" on pid " + std::to_string(pid) + " tid " + std::to_string(tid) + " ends no open \"B\"");
        Slice begun_slice = open.back().slice;
        open.pop_back();
        if (at < begun_slice.start_ns) throw bad(i, "\"E\" comes before its \"B\"");
        begun_slice.end_ns = at;
        if (begun_slice.args.empty()) begun_slice.args = slice.args;
        track_at(pid, tid).slices.push_back(begun_slice);
      }
      continue;
    }
    if (phase == "s" || phase == "f") {
      const auto id = event.find("id");
      if (id == event.end() || !(id->is_number_integer() || id->is_string())) throw bad(i, "a flow event needs an \"id\"");
      const std::string key = detail::string_field(event, "cat") + "/" + id->dump();
      PendingFlow flow;
      flow.index = i;
      flow.pid = pid;
      flow.tid = tid;
      flow.at_ns = detail::micros_to_ns(event, "ts", i);
      flow.bind_enclosing = phase == "s" || detail::string_field(event, "bp") == "e";
      track_at(pid, tid);
      auto& side = phase == "s" ? starts : finishes;
      if (!side.emplace(key, flow).second) throw bad(i, "flow " + key + (phase == "s" ? " starts" : " finishes") + " twice");
    }
  }
  for (const auto& entry : begun) {
    if (!entry.second.empty()) throw bad(entry.second.back().index, "\"B\" \"" + entry.second.back().slice.name + "\" never ends");
  }

  for (Track& track : timeline.tracks) {
    if (track.name.empty()) track.name = "thread " + std::to_string(track.tid);
    detail::nest(track);
  }
  // Flows bind to slices of the tracks as they stand now; the tracks are reordered afterwards.
  const auto bind = [&](const PendingFlow& flow, const char* end) {
    FlowEnd bound;
    bound.track = track_of.at(std::make_pair(flow.pid, flow.tid));
    bound.at_ns = flow.at_ns;
    const Track& track = timeline.tracks[bound.track];
    bound.slice = flow.bind_enclosing ? detail::enclosing(track, flow.at_ns) : detail::next_beginning(track, flow.at_ns);
    if (bound.slice == track.slices.size()) throw bad(flow.index, std::string("the flow's ") + end + " is in no slice of its track");
    if (!flow.bind_enclosing) bound.at_ns = track.slices[bound.slice].start_ns;  // the arrow points at the slice it binds to
    return bound;
  };
  for (const auto& start : starts) {
    const auto finish = finishes.find(start.first);
    if (finish == finishes.end()) throw bad(start.second.index, "flow " + start.first + " starts but never finishes");
    timeline.flows.push_back({bind(start.second, "start"), bind(finish->second, "finish")});
  }
  for (const auto& finish : finishes) {
    if (starts.count(finish.first) == 0) throw bad(finish.second.index, "flow " + finish.first + " finishes but never starts");
  }

  // Perfetto's order: by process, then the thread's sort index, then its id.
  std::vector<std::size_t> order(timeline.tracks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Track& x = timeline.tracks[a];
    const Track& y = timeline.tracks[b];
    return std::tie(x.pid, x.sort_index, x.tid) < std::tie(y.pid, y.sort_index, y.tid);
  });
  std::vector<std::size_t> position(order.size());
  std::vector<Track> sorted;
  for (std::size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
    sorted.push_back(std::move(timeline.tracks[order[i]]));
  }
  timeline.tracks = std::move(sorted);
  for (Flow& flow : timeline.flows) {
    flow.from.track = position[flow.from.track];
    flow.to.track = position[flow.to.track];
  }

  if (timeline.slice_count() == 0) throw chorus::Error(chorus::ErrorCode::invalid_argument, "the trace has no slices to draw");
  bool first = true;
  for (const Track& track : timeline.tracks) {
    for (const Slice& slice : track.slices) {
      timeline.begin_ns = first ? slice.start_ns : std::min(timeline.begin_ns, slice.start_ns);
      timeline.end_ns = first ? slice.end_ns : std::max(timeline.end_ns, slice.end_ns);
      first = false;
    }
  }
  return timeline;
}

}  // namespace trace_timeline
