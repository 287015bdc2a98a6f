// The step trace behind CHORUS_TRACE: every collective and every schedule step each rank ran, with
// times, written in the Chrome trace-event format (Perfetto, chrome://tracing): one track per rank,
// a slice per collective with its steps' slices nested inside (send, recv, recv+reduce, copy,
// reduce; args: bytes, peer), and a flow arrow from each send to the receive that matched it.
//
// Recording is off unless asked for: it appends to a vector per rank (allocation is fine here, the
// flight recorder is what stays on). Each log has one writer, its rank's thread; the file is written
// after the threads are joined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "call_descriptor.hpp"
#include "call_record.hpp"
#include "flight_recorder.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

struct TraceEvent {
  bool is_call = false;        // a collective (else one of its steps)
  bool failed = false;         // the call left with an exception
  std::uint32_t comm = 0;      // communicator id: sends and receives pair within one communicator
  std::int32_t rank = 0;       // rank in that communicator
  std::uint64_t sequence = 0;  // the call's sequence number in that communicator
  CallDescriptor call{};       // calls only
  algo::Op op = algo::Op::send;  // steps only, and:
  std::int32_t index = 0;      // the step's index in this rank's list
  std::int32_t peer = -1;
  std::int32_t match = -1;     // recv: index of the matching send in the peer's list
  std::uint64_t bytes = 0;
  std::int64_t start_ns = 0;
  std::int64_t ready_ns = 0;   // recv: when the sender's data was readable
  std::int64_t end_ns = 0;
};

struct RankTrace {
  std::vector<TraceEvent> events;
  std::uint64_t dropped = 0;  // past kMaxEventsPerRank
};

class StepTrace {
 public:
  static constexpr std::size_t kMaxEventsPerRank = std::size_t{1} << 22;  // 4M events: ~400 MiB per rank

  explicit StepTrace(int ranks) : ranks_(static_cast<std::size_t>(ranks)), origin_ns_(steady_now_ns()) {}

  int size() const { return static_cast<int>(ranks_.size()); }
  // Only the thread of `track` (a team rank) appends.
  void add(int track, const TraceEvent& event) {
    RankTrace& log = ranks_[static_cast<std::size_t>(track)];
    if (log.events.size() >= kMaxEventsPerRank) {
      ++log.dropped;
      return;
    }
    log.events.push_back(event);
  }
  const RankTrace& track(int t) const { return ranks_[static_cast<std::size_t>(t)]; }

  // After the writers are joined.
  void write_chrome_json(std::ostream& out, const std::string& process_name) const;

 private:
  std::vector<RankTrace> ranks_;
  std::int64_t origin_ns_;
};

namespace detail {

// Microseconds, exact to the nanosecond, so a slice nested in another stays nested after printing.
inline std::string trace_us(std::int64_t ns) {
  const bool negative = ns < 0;  // a JSON number has one sign in front, never one per part
  if (negative) ns = -ns;
  const std::int64_t whole = ns / 1000;
  const std::int64_t frac = ns % 1000;
  std::string text = chorus::detail::concat(negative ? "-" : "", whole, ".");
  if (frac < 100) text += '0';
  if (frac < 10) text += '0';
  return text + std::to_string(frac);
}

inline const char* step_name(algo::Op op) {
  switch (op) {
    case algo::Op::send: return "send";
    case algo::Op::recv_copy: return "recv";
    case algo::Op::recv_reduce: return "recv+reduce";
    case algo::Op::copy: return "copy";
    case algo::Op::reduce: return "reduce";
  }
  return "step";
}

}  // namespace detail

inline void StepTrace::write_chrome_json(std::ostream& out, const std::string& process_name) const {
  using chorus::detail::concat;
  using detail::trace_us;
  const auto at = [this](std::int64_t ns) { return trace_us(ns - origin_ns_); };
  // A send is known by (communicator, call, sender, step index); its receive names the same four.
  using SendKey = std::tuple<std::uint32_t, std::uint64_t, std::int32_t, std::int32_t>;
  std::map<SendKey, std::uint64_t> flow_of_send;
  std::map<SendKey, bool> received;
  for (const RankTrace& log : ranks_) {
    for (const TraceEvent& e : log.events) {
      // Only receives whose data arrived: one that failed while waiting has no arrival to point at.
      if (!e.is_call && algo::is_recv(e.op) && e.ready_ns != 0) received[SendKey{e.comm, e.sequence, e.peer, e.match}] = true;
    }
  }
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  out << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": \""
      << process_name << "\"}}";
  std::uint64_t next_flow = 1;
  for (std::size_t t = 0; t < ranks_.size(); ++t) {
    out << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " << t
        << ", \"args\": {\"name\": \"rank " << t << "\"}}";
    out << ",\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, \"tid\": " << t
        << ", \"args\": {\"sort_index\": " << t << "}}";
    for (const TraceEvent& e : ranks_[t].events) {
      const std::string head = concat(",\n{\"pid\": 0, \"tid\": ", t, ", ");
      if (e.is_call) {
        out << head << "\"ph\": \"X\", \"cat\": \"collective\", \"name\": \"" << to_string(e.call.kind)
            << "\", \"ts\": " << at(e.start_ns) << ", \"dur\": " << trace_us(e.end_ns - e.start_ns)
            << ", \"args\": {\"call\": " << e.sequence << ", \"what\": \"" << describe(e.call)
            << "\", \"communicator\": " << e.comm << ", \"rank\": " << e.rank << ", \"state\": \""
            << (e.failed ? "failed" : "done") << "\"}}";
        continue;
      }
      out << head << "\"ph\": \"X\", \"cat\": \"step\", \"name\": \"" << detail::step_name(e.op)
          << "\", \"ts\": " << at(e.start_ns) << ", \"dur\": " << trace_us(e.end_ns - e.start_ns)
          << ", \"args\": {\"step\": " << e.index << ", \"bytes\": " << e.bytes;
      if (e.peer >= 0) out << ", \"peer\": " << e.peer;
      out << ", \"call\": " << e.sequence << "}}";
      // Flow arrows: out of the send at its start, into the receive when the data arrived.
      if (e.op == algo::Op::send) {
        const SendKey key{e.comm, e.sequence, e.rank, e.index};
        if (received.count(key) == 0) continue;
        const std::uint64_t id = next_flow++;
        flow_of_send[key] = id;
        out << head << "\"ph\": \"s\", \"cat\": \"message\", \"name\": \"message\", \"id\": " << id
            << ", \"ts\": " << at(e.start_ns) << "}";
      }
    }
  }
  // Receives after every send has its id (a receive's track may come before its sender's).
  for (std::size_t t = 0; t < ranks_.size(); ++t) {
    for (const TraceEvent& e : ranks_[t].events) {
      if (e.is_call || !algo::is_recv(e.op) || e.ready_ns == 0) continue;
      const auto found = flow_of_send.find(SendKey{e.comm, e.sequence, e.peer, e.match});
      if (found == flow_of_send.end()) continue;
      out << ",\n{\"pid\": 0, \"tid\": " << t << ", \"ph\": \"f\", \"bp\": \"e\", \"cat\": \"message\", "
          << "\"name\": \"message\", \"id\": " << found->second << ", \"ts\": " << at(e.ready_ns) << "}";
    }
  }
  out << "\n]}\n";
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
