// Every rank's flight record of one communicator as JSON, for comm.dump_trace(path) and
// CHORUS_TRACE_DUMP. Shape (docs/debugging.md):
//   {"format": "chorus-flight-record", "version": 2, "communicator": "pid4242-t123456-comm0", "size": 4,
//    "pid": 4242, "summary": "<desync summary>",
//    "ranks": [{"rank": 0, "returned": false, "calls": [{"sequence": 1, "collective": "all_reduce",
//      "count": 16, "type": "float", "op": "sum", "root": 0, "algorithm": "ring", "in_place": false,
//      "state": "done", "start_ns": ..., "end_ns": ..., "steps": 6, "step": 5, "peer": 1}, ...]}, ...]}
// Times are steady-clock nanoseconds, comparable between the ranks of one process. "communicator"
// names the communicator for the whole job (the same string in every rank's dump of it, different
// in any other run), so chorus-trace-summary can merge one process's dump per MPI rank and refuse to
// mix runs; "size" is its rank count, "pid" the process that wrote the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "desync_summary.hpp"
#include "flight_recorder.hpp"

#if defined(_WIN32)
#include <process.h>
#else
#include <unistd.h>
#endif

CHORUS_NAMESPACE_BEGIN namespace runtime {

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

inline long process_id() {
#if defined(_WIN32)
  return static_cast<long>(_getpid());
#else
  return static_cast<long>(getpid());
#endif
}

// "pid4242-t8801234567": this process, distinguished from an earlier process that had the same pid by
// the steady clock when it first asked. A communicator's name starts with its creator's tag.
inline const std::string& process_tag() {
  static const std::string tag = chorus::detail::concat("pid", process_id(), "-t", steady_now_ns());
  return tag;
}

// Which communicator a dump belongs to, the same in every rank's dump of it.
struct DumpOrigin {
  std::string communicator;  // e.g. process_tag() + "-comm3"
  int size = 0;              // its ranks
};

// `dir`/chorus-flight-record-<comm>-rank<r>-pid<pid>.json: a file of its own per communicator, rank and
// process, so processes dumping into one directory (MPI ranks, or two runs) never overwrite each other.
inline std::string dump_path(const std::string& dir, const std::string& comm, int rank) {
  return chorus::detail::concat(dir, "/chorus-flight-record-", comm, "-rank", rank, "-pid", process_id(), ".json");
}

inline void write_flight_record_json(std::ostream& out, const std::vector<RankRecord>& ranks, const DumpOrigin& origin) {
  out << "{\"format\": \"chorus-flight-record\", \"version\": 2, \"communicator\": " << json_string(origin.communicator)
      << ", \"size\": " << origin.size << ", \"pid\": " << process_id()
      << ",\n \"summary\": " << json_string(desync_summary(ranks)) << ",\n \"ranks\": [";
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
inline void dump_flight_record(const std::string& path, const std::vector<RankRecord>& ranks, const DumpOrigin& origin,
                               const char* call, RankName rank) {
  std::ofstream file(path);
  if (file) write_flight_record_json(file, ranks, origin);
  file.close();
  if (!file) throw make_error(ErrorCode::invalid_argument, call, rank, "cannot write the flight record to '", path, "'");
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
