// The -J document of chorus-bench, shared with the peer programs (chorus-mpi-peer) so that every
// tool's JSON has the same keys and a script (bench/chorus-compare) reads them all the same way.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <chorus/bench/table.hpp>
#include <chorus/core/error.hpp>
#include <chorus/model/predict.hpp>

#include "sample_timing.hpp"

namespace bench_json {

namespace bench = chorus::bench;
using Predictions = std::vector<std::optional<chorus::model::Prediction>>;

// The document's header: who measured what, and how.
struct RunInfo {
  std::string tool;
  std::string version;
  std::string backend;
  std::string collective;
  std::string algorithm;
  int ranks = 0;
  sample_timing::Rule timing;
  int check_iters = 0;
  int repeats = 1;  // samples per row (chorus-bench --repeats)
};

inline nlohmann::json to_json(const bench::Result& result) {
  nlohmann::json j{{"time_us", result.seconds * 1e6}, {"algbw_gbps", result.algbw}, {"busbw_gbps", result.busbw}};
  j["wrong"] = result.wrong ? nlohmann::json(*result.wrong) : nlohmann::json(nullptr);
  return j;
}

// One entry per row; `predicted` may be shorter than `rows` or empty (no prediction). `counts`: the calls
// each row's samples made (per placement: "warmup", "iters", and "loops", the loops those calls were timed in,
// 1 with -n; by time also "loops_us", each loop's time, whose nearest-rank median is "time_us"), one per row.
//   "iters": -n, or null when chosen by time; "min_time_s": --min-time then, else null; "warmup": -w (exact
//   with -n, the least number without).
inline nlohmann::json document(const RunInfo& info, const std::vector<bench::Row>& rows, const Predictions& predicted,
                               const std::vector<sample_timing::Counts>& counts) {
  nlohmann::json doc;
  doc["tool"] = info.tool;
  doc["version"] = info.version;
  doc["backend"] = info.backend;
  doc["collective"] = info.collective;
  doc["algorithm"] = info.algorithm;
  doc["ranks"] = info.ranks;
  doc["iters"] = info.timing.by_time() ? nlohmann::json(nullptr) : nlohmann::json(info.timing.iters);
  doc["min_time_s"] = info.timing.by_time() ? nlohmann::json(info.timing.min_time) : nlohmann::json(nullptr);
  doc["warmup"] = info.timing.warmup;
  doc["check_iters"] = info.check_iters;
  doc["repeats"] = info.repeats;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bench::Row& row = rows[i];
    doc["rows"].push_back({{"size", row.bytes},
                           {"count", row.elements},
                           {"type", row.type},
                           {"redop", row.redop},
                           {"root", row.root},
                           {"out_of_place", to_json(row.out_of_place)},
                           {"in_place", to_json(row.in_place)}});
    if (i < counts.size()) {
      const char* placements[2] = {"out_of_place", "in_place"};
      for (int p = 0; p < 2; ++p) {
        nlohmann::json& at = doc["rows"].back()[placements[p]];
        at["warmup"] = counts[i].warmup[p];
        at["iters"] = counts[i].iters[p];
        at["loops"] = counts[i].loops[p];
        if (!counts[i].loop_seconds[p].empty()) {  // by time: each loop's figure; time_us is their median
          nlohmann::json us = nlohmann::json::array();
          for (double t : counts[i].loop_seconds[p]) us.push_back(t * 1e6);
          at["loops_us"] = us;
        }
        const std::vector<double>& seconds = counts[i].samples_seconds[p];
        if (seconds.size() > 1) {  // chorus-bench --repeats: every sample, and the spread
          nlohmann::json us = nlohmann::json::array();
          for (double t : seconds) us.push_back(t * 1e6);
          at["samples_us"] = us;
          at["samples_iters"] = counts[i].samples_iters[p];
          at["min_us"] = *std::min_element(seconds.begin(), seconds.end()) * 1e6;
          at["max_us"] = *std::max_element(seconds.begin(), seconds.end()) * 1e6;
          at["spread"] = counts[i].spread(p);
        }
      }
    }
    if (i < predicted.size() && predicted[i]) {
      doc["rows"].back()["predicted"] = {{"algorithm", chorus::algo::to_string(predicted[i]->pattern)},
                                         {"time_us", predicted[i]->time_us},
                                         {"busbw_gbps", predicted[i]->busbw_GBps}};
    }
  }
  doc["out_of_bounds"] = bench::total_wrong(rows);
  doc["avg_busbw_gbps"] = bench::average_busbw(rows);
  return doc;
}

inline void write(const std::string& path, const nlohmann::json& doc) {
  std::ofstream file(path);
  file << doc.dump(2) << "\n";
  if (!file) throw chorus::Error(chorus::ErrorCode::invalid_argument, "cannot write JSON to " + path);
}

}  // namespace bench_json
