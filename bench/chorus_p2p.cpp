// chorus-p2p: the point-to-point matrix between host CPUs (docs/p2p.md), in the style of CUDA's
// p2pBandwidthLatencyTest and nvbandwidth: unidirectional and bidirectional bandwidth and one-way
// latency for every ordered pair of the chosen CPUs, each CPU labelled with its NUMA node, as text
// tables and (-J) JSON. --via raw measures plain memcpy and atomics; --via chorus the same bytes through
// host::Comm send/recv. A cell that was not measured prints n/a (JSON null), never a number.
//
//   chorus-p2p [--cpus 0-3] [--via raw|chorus] [--copy read|write] [-s 32M] [-n 4] [-r 21]
//              [--latency-iters 200] [-J out.json]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <chorus/core/config.hpp>
#include <chorus/bench/cpu_list.hpp>
#include <chorus/bench/numa_nodes.hpp>
#include <chorus/bench/sizes.hpp>

#include "p2p_host.hpp"
#include "p2p_matrix.hpp"
#include "p2p_matrix_json.hpp"


namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The CPUs to measure: --cpus, or every CPU this process may run on. Each must be allowed, so a
// thread pinned to it runs there and not wherever the kernel falls back to.
std::vector<int> chosen_cpus(bool given, const std::string& text) {
  const std::vector<int> allowed = p2p::allowed_cpus();
  if (!given) return allowed;
  std::vector<int> cpus;
  try {
    cpus = chorus::bench::parse_cpu_list(text);
  } catch (const chorus::Error& e) {
    throw UsageError(std::string("--cpus: ") + e.what());
  }
  if (cpus.empty()) throw UsageError("--cpus names no CPU");
  for (int cpu : cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) {
      throw UsageError("--cpus: CPU " + std::to_string(cpu) + " is not in this process's allowed CPU set " +
                       chorus::bench::format_cpu_list(allowed));
    }
  }
  return cpus;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-p2p: bandwidth and latency between every pair of CPUs (docs/p2p.md)"};
  app.set_version_flag("--version", CHORUS_VERSION_STRING);
  std::string cpus_text, via = "raw", copy = "read", size_text = "32M", json_path;
  p2p::Settings settings;
  const CLI::Option* cpus_option = app.add_option("--cpus", cpus_text, "CPUs to measure, e.g. 0-3,8 (default: every CPU this process may use)");
  app.add_option("--via", via, "raw (memcpy and atomics) or chorus (host::Comm send/recv)")
      ->check(CLI::IsMember({"raw", "chorus"}))
      ->capture_default_str();
  app.add_option("--copy", copy,
                 "read: the destination CPU copies from the source's buffer; write: the source CPU copies into "
                 "the destination's buffer (raw only)")
      ->check(CLI::IsMember({"read", "write"}))
      ->capture_default_str();
  app.add_option("-s,--size", size_text, "bytes per copy (K, M, G suffixes)")->capture_default_str();
  app.add_option("-n,--iters", settings.iters, "copies per timed sample")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("-r,--repeats", settings.repeats, "timed samples; the median is printed")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--latency-iters", settings.latency_iters, "round trips per latency sample")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  app.add_option("-J,--json", json_path, "also write the matrices as JSON to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-p2p: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }

  std::vector<int> cpus;
  try {
    settings.bytes = chorus::bench::parse_size(size_text);
    if (settings.bytes == 0) throw UsageError("--size must be at least 1 byte");
    settings.write = copy == "write";
    if (settings.write && via == "chorus") {
      throw UsageError("--copy write needs --via raw (Comm::recv always copies on the receiving CPU)");
    }
    cpus = chosen_cpus(cpus_option->count() > 0, cpus_text);
    if (!json_path.empty() && !std::ofstream(json_path, std::ios::app)) {
      throw UsageError("cannot write JSON to " + json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-p2p: error: %s\n", e.what());
    return 2;
  }

  try {
    const std::map<int, int> node_of = chorus::bench::numa_node_of_cpus();
    std::vector<std::string> labels;
    for (int cpu : cpus) labels.push_back(std::to_string(cpu));
    const bool raw = via == "raw";
    const std::string diagonal = raw ? "local copy on that CPU" : "n/a";
    p2p::Matrix uni("Unidirectional bandwidth (GB/s)", diagonal, labels);
    p2p::Matrix bi("Bidirectional bandwidth (GB/s, both directions' bytes)", "n/a", labels);
    p2p::Matrix latency("One-way latency (us, round trip / 2)", "n/a", labels);
    for (std::size_t row = 0; row < cpus.size(); ++row) {
      for (std::size_t column = 0; column < cpus.size(); ++column) {
        const p2p::PairFigures figures = raw ? p2p::measure_raw(cpus[row], cpus[column], settings)
                                             : p2p::measure_chorus(cpus[row], cpus[column], settings);
        uni.cells[row][column] = figures.uni_gbps;
        bi.cells[row][column] = figures.bi_gbps;
        latency.cells[row][column] = figures.latency_us;
      }
    }

    std::printf("# chorus-p2p %s: via %s, %s, %zu bytes x %d copies per sample, median of %d samples; "
                "latency over %d round trips per sample\n",
                CHORUS_VERSION_STRING, via.c_str(),
                settings.write ? "write (the source CPU copies into the destination's buffer)"
                               : "read (the destination CPU copies from the source's buffer)",
                settings.bytes, settings.iters, settings.repeats, settings.latency_iters);
    nlohmann::json nodes = nlohmann::json::array();  // null: the node is unknown
    std::string node_text;
    for (int cpu : cpus) {
      const auto it = node_of.find(cpu);
      nodes.push_back(it == node_of.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second));
      node_text += " " + std::to_string(cpu) + ":" + (it == node_of.end() ? "?" : std::to_string(it->second));
    }
    std::printf("# NUMA node of each CPU (cpu:node, ? = unknown):%s\n\n", node_text.c_str());
    for (const p2p::Matrix* m : {&uni, &bi, &latency}) p2p::print_matrix(stdout, *m, "source CPU", "destination CPU");
    std::fflush(stdout);

    if (!json_path.empty()) {
      nlohmann::json doc = {{"tool", "chorus-p2p"},
                            {"version", CHORUS_VERSION_STRING},
                            {"via", via},
                            {"copy", copy},
                            {"bytes", settings.bytes},
                            {"iters", settings.iters},
                            {"repeats", settings.repeats},
                            {"latency_iters", settings.latency_iters},
                            {"cpus", cpus},
                            {"numa_nodes", nodes},
                            {"unidirectional_gbps", p2p::matrix_json(uni)},
                            {"bidirectional_gbps", p2p::matrix_json(bi)},
                            {"latency_us", p2p::matrix_json(latency)}};
      std::ofstream out(json_path);
      out << doc.dump(2) << "\n";
      if (!out) throw chorus::Error(chorus::ErrorCode::invalid_argument, "cannot write JSON to " + json_path);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "chorus-p2p: error: %s\n", e.what());
    return 1;
  }
}
