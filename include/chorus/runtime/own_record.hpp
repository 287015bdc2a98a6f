// What a rank of a multi-process backend (MPI, shared memory) says about itself when a call fails. A
// process holds only its own rank's flight record, and after a failure no channel between the ranks
// can be trusted to gather the others', so each rank that fails or is released (a) appends its own
// last completed and current call to its error and (b) with CHORUS_TRACE_DUMP=dir writes its record
// to a file of its own in dir; chorus-trace-summary then merges every rank's file into the desync
// summary (docs/debugging.md).
#pragma once

#include <cstdint>
#include <string>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "flight_record_json.hpp"
#include "flight_recorder.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

// A communicator's name for its dumps, the same on every rank: rank 0 makes it, the others receive it.
struct CommName {
  std::string text;     // "pid4242-t8801234567-comm3": rank 0's process and its communicator count
  std::uint32_t id = 0;  // the 3 (file names)
};

// `error` with this rank's own record appended, after writing it under CHORUS_TRACE_DUMP (once per
// communicator: `dumped` is set; later calls fail at once and have nothing new to record).
inline Error with_own_record(const Error& error, const FlightRecorder& recorder, int rank, int size,
                             const CommName& comm, const char* call, RankName name, bool& dumped) {
  RankRecord mine;
  mine.rank = rank;
  std::string text = error.what();
  try {
    mine.calls = recorder.snapshot();
    text += recorder.enabled() ? "\n  this rank's flight record: " + rank_line(mine)
                               : std::string("\n  this rank's flight record: off (CHORUS_TRACE_BUFFER=0)");
    const std::string dir = env::trace_dump_dir();
    if (!dir.empty() && !dumped) {
      dumped = true;
      const std::string path = dump_path(dir, chorus::detail::concat("comm", comm.id), rank);
      try {
        dump_flight_record(path, {mine}, DumpOrigin{comm.text, size}, call, name);
        text += chorus::detail::concat("\n  this rank's record: ", path, " (chorus-trace-summary ", dir,
                                       "/*.json merges every rank's)");
      } catch (const Error& e) {
        log(LogLevel::warn, e.what());
      }
    }
  } catch (const std::exception&) {  // no memory for the explanation: the error itself matters more
    return error;
  }
  return Error(error.code(), text);
}

// A communicator's dump_trace on a backend whose process holds one rank: that rank's flight record as
// JSON, the format of host::Comm::dump_trace with one rank (chorus-trace-summary merges the files).
inline void dump_own_record(const std::string& path, const FlightRecorder& recorder, int rank, int size,
                            const CommName& comm, RankName name) {
  RankRecord mine;
  mine.rank = rank;
  mine.calls = recorder.snapshot();
  dump_flight_record(path, {mine}, DumpOrigin{comm.text, size}, "dump_trace", name);
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
