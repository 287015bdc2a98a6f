// chorus-trace-svg: draws a Chrome trace-event file (CHORUS_TRACE's step trace, or any file Perfetto and
// chrome://tracing load) as an SVG timeline laid out as Perfetto lays it out: a track per rank, nested
// slices in stacked rows, an arrow per flow from send to receive, a time axis. It is chorus's own
// rendering of the file, for docs and for machines without a browser, not a screenshot of Perfetto.
//   chorus-trace-svg ring.json -o ring.svg [--width 1200] [--title "ring all_reduce"]
// Exit status 2 on a usage error or a file it cannot draw, with "chorus-trace-svg: error: ..." on
// stderr, as chorus-bench and chorus-schedule.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-trace-svg: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  try {
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
