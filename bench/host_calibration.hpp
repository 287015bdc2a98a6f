// The host backend's alpha and beta for chorus-bench --predict: measured once per machine, rank
// count and chorus version, and cached so later runs start at once.
//
// Measurement: ring all_reduce of floats at 4 KiB, 256 KiB and 4 MiB on a host::Team of the
// benchmark's rank count, pipelined as the host backend pipelines (host/tuning.hpp), each size
// timed 3 times (3 warm-up calls, then 10 timed calls per time, the slowest rank's) and the fastest
// kept (other processes on the machine only ever add time; the model describes the machine, not
// its neighbours); model::fit_alpha_beta turns the three times into alpha and beta (docs/cost-model.md,
// "Calibration").
//
// Cache: $XDG_CACHE_HOME/chorus/host-calibration.json, or ~/.cache/chorus/ without XDG_CACHE_HOME.
// One JSON document per machine: the chorus version, host name and core count it was measured
// under, and one entry per rank count. A different version, host name or core count discards
// every entry (the code or the machine changed); an unreadable file is measured over.
#pragma once

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <chorus/bench/call.hpp>
#include <chorus/bench/timing.hpp>
#include <chorus/host.hpp>
#include <chorus/model/calibration.hpp>

namespace host_calibration {

struct Calibration {
  chorus::model::AlphaBeta fit;
  std::vector<chorus::model::Sample> samples;
  bool from_cache = false;
  std::string cache_path;  // empty when no cache directory could be found
};

inline std::string cache_path() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return (fs::path(xdg) / "chorus" / "host-calibration.json").string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (fs::path(home) / ".cache" / "chorus" / "host-calibration.json").string();
  }
  return {};
}

inline std::string machine_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// Seconds per ring all_reduce of `count` floats on `ranks` host threads: the fastest of 3.
inline double measure_ring(int ranks, std::size_t count) {
  chorus::host::Team team(ranks);
  std::vector<double> times;
  for (int repeat = 0; repeat < 3; ++repeat) {
    std::vector<double> per_rank(static_cast<std::size_t>(ranks), 0.0);
    team.run([&](chorus::host::Comm& comm) {
      std::vector<float> send(count, 1.0f), recv(count);
      per_rank[comm.rank()] = chorus::bench::seconds_per_call(comm, 3, 10, [&] {
        comm.all_reduce(send.data(), recv.data(), count, chorus::ReduceOp::sum, chorus::Algorithm::ring);
      });
    });
    times.push_back(*std::max_element(per_rank.begin(), per_rank.end()));
  }
  return *std::min_element(times.begin(), times.end());
}

inline nlohmann::json read_cache(const std::string& path) {
  std::ifstream file(path);
  if (!file) return nullptr;
  try {
    return nlohmann::json::parse(file);
  } catch (const std::exception&) {
    return nullptr;  // damaged: measure again and overwrite
  }
}

// The calibration for `ranks` host ranks under chorus `version`: from the cache when it holds
// one for this version and machine, otherwise measured now and written back.
inline Calibration calibrate(int ranks, const std::string& version) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string machine = machine_name();
  const std::string key = std::to_string(ranks);
  Calibration out;
  out.cache_path = cache_path();
  nlohmann::json doc = out.cache_path.empty() ? nlohmann::json(nullptr) : read_cache(out.cache_path);
  const bool same = doc.is_object() && doc.value("version", "") == version && doc.value("machine", "") == machine &&
                    doc.value("cores", 0u) == cores && doc.contains("entries") && doc["entries"].is_object();
  if (same && doc["entries"].contains(key)) {
    try {
      const nlohmann::json& entry = doc["entries"][key];
      out.fit = {entry.at("alpha_us").get<double>(), entry.at("beta_GBps").get<double>()};
      for (const auto& s : entry.at("samples")) out.samples.push_back({s.at(0).get<std::size_t>(), s.at(1).get<double>()});
      if (out.fit.alpha_us >= 0.0 && out.fit.beta_GBps > 0.0) {
        out.from_cache = true;
        return out;
      }
    } catch (const std::exception&) {
      // a damaged entry: measure again
    }
  }
  for (std::size_t bytes : {std::size_t(4) << 10, std::size_t(256) << 10, std::size_t(4) << 20}) {
    out.samples.push_back({bytes / sizeof(float), measure_ring(ranks, bytes / sizeof(float))});
  }
  out.fit = chorus::model::fit_alpha_beta(chorus::Collective::all_reduce, chorus::algo::Pattern::ring, ranks,
                                          sizeof(float), chorus::host::detail::slice_elements(sizeof(float)),
                                          out.samples);
  if (!same) doc = {{"version", version}, {"machine", machine}, {"cores", cores}, {"entries", nlohmann::json::object()}};
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : out.samples) samples.push_back({s.count, s.seconds});
  doc["entries"][key] = {{"alpha_us", out.fit.alpha_us}, {"beta_GBps", out.fit.beta_GBps}, {"samples", samples}};
  if (!out.cache_path.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(out.cache_path).parent_path(), ignored);
    std::ofstream file(out.cache_path);
    file << doc.dump(2) << "\n";  // a cache that cannot be written only costs the next run a measurement
  }
  return out;
}

}  // namespace host_calibration
