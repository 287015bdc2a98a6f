// Every rank's flight record of one communicator as JSON, for comm.dump_trace(path) and
// CHORUS_TRACE_DUMP. Shape (docs/debugging.md):
//   {"format": "chorus-flight-record", "version": 1, "summary": "<desync summary>",
//    "ranks": [{"rank": 0, "returned": false, "calls": [{"sequence": 1, "collective": "all_reduce",
//      "count": 16, "type": "float", "op": "sum", "root": 0, "algorithm": "ring", "in_place": false,
//      "state": "done", "start_ns": ..., "end_ns": ..., "steps": 6, "step": 5, "peer": 1}, ...]}, ...]}
// Times are steady-clock nanoseconds, comparable between the ranks of one process.
#pragma once

#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "desync_summary.hpp"

namespace chorus::runtime {

// `text` as a JSON string literal (the summary has newlines; paths may have anything).
inline std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline void write_call_json(std::ostream& out, const CallRecord& r) {
  out << "{\"sequence\": " << r.sequence << ", \"collective\": \"" << to_string(r.call.kind) << "\", \"count\": "
      << r.call.count << ", \"type\": \"" << chorus::to_string(r.call.type) << "\", \"op\": \""
      << chorus::to_string(r.call.op) << "\", \"root\": " << r.call.root << ", \"algorithm\": \""
      << algo::to_string(r.call.pattern) << "\", \"in_place\": " << (r.call.in_place ? "true" : "false")
      << ", \"state\": \"" << to_string(r.state) << "\", \"start_ns\": " << r.start_ns << ", \"end_ns\": " << r.end_ns
      << ", \"steps\": " << r.steps << ", \"step\": " << r.step << ", \"peer\": " << r.peer << "}";
}

inline void write_flight_record_json(std::ostream& out, const std::vector<RankRecord>& ranks) {
  out << "{\"format\": \"chorus-flight-record\", \"version\": 1,\n \"summary\": " << json_string(desync_summary(ranks))
      << ",\n \"ranks\": [";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out << (i > 0 ? ",\n  " : "\n  ") << "{\"rank\": " << ranks[i].rank
        << ", \"returned\": " << (ranks[i].returned ? "true" : "false") << ", \"calls\": [";
    for (std::size_t c = 0; c < ranks[i].calls.size(); ++c) {
      out << (c > 0 ? ",\n    " : "\n    ");
      write_call_json(out, ranks[i].calls[c]);
    }
    out << "]}";
  }
  out << "]}\n";
}

// Writes the file, or throws chorus::Error naming `call`, `rank` and the path.
inline void dump_flight_record(const std::string& path, const std::vector<RankRecord>& ranks, const char* call,
                               RankName rank) {
  std::ofstream file(path);
  if (file) write_flight_record_json(file, ranks);
  file.close();
  if (!file) throw make_error(ErrorCode::invalid_argument, call, rank, "cannot write the flight record to '", path, "'");
}

}  // namespace chorus::runtime
