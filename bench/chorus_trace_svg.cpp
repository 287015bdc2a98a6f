// chorus-trace-svg: draws a Chrome trace-event file (CHORUS_TRACE's step trace, or any file Perfetto and
// chrome://tracing load) as an SVG timeline laid out as Perfetto lays it out: a track per rank, nested
// slices in stacked rows, an arrow per flow from send to receive, a time axis. It is chorus's own
// rendering of the file, for docs and for machines without a browser, not a screenshot of Perfetto.
//   chorus-trace-svg ring.json -o ring.svg [--width 1200] [--title "ring all_reduce"] [--from 400 --to 450]
// --from and --to (microseconds on the picture's axis, 0 = the first slice's start) zoom in on a window.
// Exit status 2 on a usage error or a file it cannot draw, with "chorus-trace-svg: error: ..." on
// stderr, as chorus-bench and chorus-schedule.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "trace_svg.hpp"
#include "trace_timeline.hpp"

namespace {

chorus::Error usage_error(const std::string& message) { return chorus::Error(chorus::ErrorCode::invalid_argument, message); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw usage_error("cannot open " + path);
  try {
    return nlohmann::json::parse(file);
  } catch (const nlohmann::json::parse_error& e) {
    throw usage_error(path + " is not JSON: " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-trace-svg: draws a Chrome trace-event JSON file (CHORUS_TRACE's step trace) as an SVG timeline: "
               "a track per rank, nested slices, flow arrows from send to receive"};
  std::string input;
  std::string output;
  trace_svg::Options options;
  app.add_option("trace", input, "the trace-event JSON file")->required();
  app.add_option("-o,--output", output, "the SVG file to write (- for stdout)")->required();
  app.add_option("--width", options.width, "picture width in pixels")->capture_default_str()->check(CLI::Range(300.0, 20000.0));
  app.add_option("--title", options.title, "title line (default: the trace's process name)");
  double from_us = 0;
  double to_us = 0;
  auto* from_opt = app.add_option("--from", from_us, "zoom: the window's start, in microseconds after the first slice's start")
                       ->check(CLI::Range(0.0, 9.0e12));
  auto* to_opt = app.add_option("--to", to_us, "zoom: the window's end, in microseconds after the first slice's start")
                     ->check(CLI::Range(0.0, 9.0e12));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-trace-svg: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  try {
    if (*from_opt && !*to_opt) throw usage_error("--from needs --to");
    if (*to_opt && from_us >= to_us) {
      throw usage_error("--to " + svg_elements::num(to_us) + " must come after --from " + svg_elements::num(from_us));
    }
    options.from_ns = std::llround(from_us * 1000.0);
    options.to_ns = std::llround(to_us * 1000.0);
    const trace_timeline::Timeline timeline = trace_timeline::read(read_json(input));
    options.source = "drawn by chorus-trace-svg from " + input + " (" + std::to_string(timeline.slice_count()) + " slices, " +
                     std::to_string(timeline.flows.size()) + " flows)";
    const std::string svg = trace_svg::render(timeline, options);
    if (output == "-") {
      std::cout << svg;
      return std::cout.flush() ? 0 : 2;
    }
    std::ofstream file(output);
    file << svg;
    if (!file.flush()) throw usage_error("cannot write the picture to " + output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-trace-svg: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
