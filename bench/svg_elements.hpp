// The few SVG elements chorus's tools draw with (hand-written SVG, no library): numbers in a
// compact form, escaped text, lines, rectangles and the document head. Shared by chorus-schedule's
// pictures (schedule_svg.hpp) and chorus-bench's plots (busbw_svg.hpp).
#pragma once

#include <cstdio>
#include <string>

#include <chorus/topo/xml.hpp>

namespace svg_elements {

inline std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

inline std::string text(double x, double y, const std::string& body, const std::string& attributes = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attributes.empty() ? "" : " " + attributes) + ">" +
         chorus::topo::xml::escape(body) + "</text>\n";
}

inline std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " +
         attributes + "/>\n";
}

inline std::string rect(double x, double y, double w, double h, const std::string& attributes) {
  return "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" " +
         attributes + "/>\n";
}

inline std::string open_svg(double width, double height) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" font-family=\"monospace\" font-size=\"11\">\n" + rect(0, 0, width, height, "fill=\"white\"");
}

}  // namespace svg_elements
