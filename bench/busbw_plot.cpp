// chorus-plot: chorus-bench's busbw picture (bench/busbw_svg.hpp) for series measured elsewhere,
// e.g. bench/chorus-compare's chorus, MPI and predicted lines in one plot. Reads
//   {"title": "...", "series": [{"name": "...", "line": "measured", "points": [[bytes, busbw_gbps], ...]}, ...]}
// and writes the SVG. "line" is measured (solid, the default), predicted (dashed) or limit (dotted);
// "dashed": true, the older spelling, means predicted. Exit status 2 on a usage error or malformed input.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "busbw_svg.hpp"

int main(int argc, char** argv) {
  CLI::App app{"chorus-plot: draw busbw against message size (log scale) for several series, from JSON"};
  std::string input, output;
  app.add_option("input", input, "series JSON file")->required();
  app.add_option("-o,--svg", output, "SVG file to write")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-plot: error: ");
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    std::ifstream in(input);
    if (!in) throw std::runtime_error("cannot read " + input);
    const nlohmann::json doc = nlohmann::json::parse(in);
    std::vector<busbw_svg::Series> series;
    for (const nlohmann::json& s : doc.at("series")) {
      busbw_svg::Series one{s.at("name").get<std::string>(), {}, busbw_svg::Line::measured};
      const std::string line = s.value("line", std::string(s.value("dashed", false) ? "predicted" : "measured"));
      if (line == "predicted") {
        one.line = busbw_svg::Line::predicted;
      } else if (line == "limit") {
        one.line = busbw_svg::Line::limit;
      } else if (line != "measured") {
        throw std::runtime_error("series \"" + one.name + "\" has line \"" + line +
                                 "\": expected measured, predicted or limit");
      }
      for (const nlohmann::json& point : s.at("points")) {
        const double busbw = point.at(1).get<double>();
        if (!(busbw >= 0.0)) throw std::runtime_error("series \"" + one.name + "\" has a negative or NaN busbw");
        one.points.emplace_back(point.at(0).get<std::size_t>(), busbw);
      }
      series.push_back(std::move(one));
    }
    std::ofstream out(output);
    out << busbw_svg::render(doc.value("title", std::string("busbw")), series);
    if (!out) throw std::runtime_error("cannot write SVG to " + output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-plot: error: %s: %s\n", input.c_str(), e.what());
    return 2;
  }
  return 0;
}
