// Reads flight-record dumps (include/chorus/runtime/flight_record_json.hpp) back into the records the
// desync summary takes, and merges several files of one communicator: an MPI job's dumps hold one
// rank each (each process knows only its own), a host dump every rank. chorus-trace-summary's core,
// kept apart so its tests can call it. Anything that is not a dump of the one communicator is refused
// with BadDump naming the file and what is wrong: a summary of mixed runs would accuse the wrong rank.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <chorus/runtime/call_record.hpp>
#include <chorus/runtime/desync_summary.hpp>

namespace flight_record_reader {

namespace runtime = chorus::runtime;
using Json = nlohmann::json;

struct BadDump : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DumpFile {
  std::string path;
  std::string communicator;  // the same in every dump of one communicator of one run
  int size = 0;              // its ranks
  long pid = 0;              // the process that wrote it
  std::vector<runtime::RankRecord> ranks;
};

namespace detail {

// The enum value whose to_string is `name`, among the first `count`.
template <class Enum, class Name>
Enum by_name(const std::string& name, int count, Name&& to_string, const char* what) {
  for (int i = 0; i < count; ++i) {
    if (name == to_string(static_cast<Enum>(i))) return static_cast<Enum>(i);
  }
  throw BadDump(chorus::detail::concat("unknown ", what, " '", name, "'"));
}

inline runtime::CallRecord read_call(const Json& j) {
  runtime::CallRecord r;
  r.sequence = j.at("sequence").get<std::uint64_t>();
  r.call.kind = by_name<runtime::CallKind>(j.at("collective").get<std::string>(), 8,
                                           [](runtime::CallKind k) { return runtime::to_string(k); }, "collective");
  r.call.count = j.at("count").get<std::size_t>();
  r.call.type = by_name<chorus::DataType>(j.at("type").get<std::string>(), chorus::kDataTypeCount,
                                          [](chorus::DataType t) { return chorus::to_string(t); }, "type");
  r.call.op = by_name<chorus::ReduceOp>(j.at("op").get<std::string>(), 5,
                                        [](chorus::ReduceOp o) { return chorus::to_string(o); }, "op");
  r.call.root = j.at("root").get<int>();
  r.call.pattern = by_name<chorus::algo::Pattern>(j.at("algorithm").get<std::string>(), chorus::algo::kPatternCount,
                                                  [](chorus::algo::Pattern p) { return chorus::algo::to_string(p); },
                                                  "algorithm");
  r.call.in_place = j.at("in_place").get<bool>();
  r.state = by_name<runtime::CallState>(j.at("state").get<std::string>(), 4,
                                        [](runtime::CallState s) { return runtime::to_string(s); }, "state");
  r.start_ns = j.at("start_ns").get<std::int64_t>();
  r.end_ns = j.at("end_ns").get<std::int64_t>();
  r.steps = j.at("steps").get<std::int32_t>();
  r.step = j.at("step").get<std::int32_t>();
  r.peer = j.at("peer").get<std::int32_t>();
  return r;
}

inline std::uint64_t reached(const runtime::RankRecord& r) { return r.calls.empty() ? 0 : r.calls.back().sequence; }

}  // namespace detail

// One dump file; BadDump("<path>: <why>") when it cannot be read or is not a version-2 flight record.
inline DumpFile read_dump(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw BadDump(path + ": cannot open it");
  DumpFile dump;
  dump.path = path;
  try {
    const Json doc = Json::parse(in);
    if (!doc.is_object() || doc.value("format", std::string()) != "chorus-flight-record") {
      throw BadDump("not a chorus flight record (no \"format\": \"chorus-flight-record\")");
    }
    const int version = doc.at("version").get<int>();
    if (version != 2) {
      throw BadDump(chorus::detail::concat("format version ", version, "; this tool reads version 2 (dumps of version 1 "
                                           "do not say which communicator and run they are of)"));
    }
    dump.communicator = doc.at("communicator").get<std::string>();
    dump.size = doc.at("size").get<int>();
    dump.pid = doc.at("pid").get<long>();
    if (dump.size < 1) throw BadDump(chorus::detail::concat("size ", dump.size));
    for (const Json& rank : doc.at("ranks")) {
      runtime::RankRecord record;
      record.rank = rank.at("rank").get<int>();
      if (record.rank < 0 || record.rank >= dump.size) {
        throw BadDump(chorus::detail::concat("rank ", record.rank, " in a communicator of ", dump.size, " ranks"));
      }
      record.returned = rank.at("returned").get<bool>();
      for (const Json& call : rank.at("calls")) {
        try {
          record.calls.push_back(detail::read_call(call));
        } catch (const BadDump& e) {
          throw BadDump(chorus::detail::concat("rank ", record.rank, ": ", e.what()));
        }
      }
      dump.ranks.push_back(std::move(record));
    }
  } catch (const BadDump& e) {
    throw BadDump(path + ": " + e.what());
  } catch (const Json::exception& e) {
    throw BadDump(path + ": not a valid flight record: " + e.what());
  }
  return dump;
}

// Every rank's record across the files, sorted by rank, and the ranks no file holds.
struct Merged {
  std::string communicator;
  int size = 0;
  std::vector<runtime::RankRecord> ranks;
  std::vector<int> missing;
};

// All files must be of one communicator of one run. A rank found in two files of it (two host ranks
// that both detected the failure dumped every rank) keeps the record that got further.
inline Merged merge(const std::vector<DumpFile>& dumps) {
  Merged merged;
  if (dumps.empty()) throw BadDump("no dump files given");
  merged.communicator = dumps.front().communicator;
  merged.size = dumps.front().size;
  std::map<int, std::pair<runtime::RankRecord, const DumpFile*>> by_rank;
  for (const DumpFile& dump : dumps) {
    if (dump.communicator != merged.communicator || dump.size != merged.size) {
      // Name a rank both runs dumped when there is one: the clearest sign of two runs in one directory.
      const DumpFile* other = &dumps.front();
      std::string what = "dumps of different runs or communicators: ";
      for (const runtime::RankRecord& record : dump.ranks) {
        auto found = by_rank.find(record.rank);
        if (found == by_rank.end()) continue;
        other = found->second.second;
        what = chorus::detail::concat("two dumps of rank ", record.rank, " from different runs: ");
        break;
      }
      throw BadDump(chorus::detail::concat(what, other->path, " is of communicator ", other->communicator, " (",
                                           other->size, " ranks), ", dump.path, " of ", dump.communicator, " (",
                                           dump.size, " ranks); give the files of one run (an empty CHORUS_TRACE_DUMP "
                                           "directory per run)"));
    }
    for (const runtime::RankRecord& record : dump.ranks) {
      auto found = by_rank.find(record.rank);
      if (found == by_rank.end()) {
        by_rank.emplace(record.rank, std::make_pair(record, &dump));
      } else if (detail::reached(record) > detail::reached(found->second.first) ||
                 (detail::reached(record) == detail::reached(found->second.first) &&
                  record.calls.size() > found->second.first.calls.size())) {
        found->second = std::make_pair(record, &dump);
      }
    }
  }
  for (int r = 0; r < merged.size; ++r) {
    auto found = by_rank.find(r);
    if (found == by_rank.end()) {
      merged.missing.push_back(r);
    } else {
      merged.ranks.push_back(found->second.first);
    }
  }
  return merged;
}

// The tool's report: which files, which ranks are missing, and the desync summary of the rest.
inline std::string report(const Merged& merged, std::size_t files) {
  std::string text = chorus::detail::concat("chorus-trace-summary: ", files, files == 1 ? " dump" : " dumps",
                                            " of communicator ", merged.communicator, " (", merged.size, " ranks)\n");
  if (!merged.missing.empty()) {
    text += "no dump of ";
    for (std::size_t i = 0; i < merged.missing.size(); ++i) {
      text += chorus::detail::concat(i == 0 ? (merged.missing.size() == 1 ? "rank " : "ranks ") : ", ", merged.missing[i]);
    }
    text += ": an MPI rank dumps when a call of its own fails or is released, so a rank missing here never "
            "entered a call on this communicator after the failure (look at what it was doing: it may be the one "
            "behind)\n";
  }
  return text + runtime::desync_summary(merged.ranks) + "\n";
}

}  // namespace flight_record_reader
