// to_xml: an msccl::Program as the XML msccl-executor-nccl reads (every attribute it requires, including
// the newer executor's outofplace, minBytes and maxBytes; no XML declaration, as msccl-tools writes none),
// and to_msccl_xml, a chorus schedule exported (from_schedule.hpp) and written in one call.
#pragma once

#include <string>
#include <string_view>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"
#include "from_schedule.hpp"
#include "program.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

namespace msccl {

namespace write_detail {

inline std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

inline std::string attr(const char* key, const std::string& value) { return std::string(" ") + key + "=\"" + escaped(value) + "\""; }
inline std::string attr(const char* key, long long value) { return attr(key, std::to_string(value)); }
inline std::string attr(const char* key, Buffer buffer) { return attr(key, std::string(1, buffer_letter(buffer))); }

}  // namespace write_detail

// The program as XML text, one element per line. The coll attribute is the program's coll_name (the
// spelling it was read with), or the executor's spelling when that is empty.
inline std::string to_xml(const Program& program) {
  using namespace write_detail;
  std::string coll = program.coll_name;
  if (coll.empty()) coll = export_detail::coll_spelling(program.coll) ? export_detail::coll_spelling(program.coll) : "";
  std::string xml = "<algo" + attr("name", program.name) + attr("proto", std::string(to_string(program.proto))) +
                    attr("nchannels", program.nchannels) + attr("nchunksperloop", program.nchunksperloop) +
                    attr("ngpus", program.ngpus) + attr("coll", coll) + attr("inplace", program.inplace ? 1 : 0) +
                    attr("outofplace", program.outofplace ? 1 : 0) + attr("minBytes", program.min_bytes) +
                    attr("maxBytes", program.max_bytes);
  if (!program.redop.empty()) xml += attr("redop", program.redop);
  xml += ">\n";
  for (const Gpu& gpu : program.gpus) {
    xml += "  <gpu" + attr("id", gpu.id) + attr("i_chunks", gpu.i_chunks) + attr("o_chunks", gpu.o_chunks) +
           attr("s_chunks", gpu.s_chunks) + ">\n";
    for (const ThreadBlock& tb : gpu.thread_blocks) {
      xml += "    <tb" + attr("id", tb.id) + attr("send", tb.send) + attr("recv", tb.recv) + attr("chan", tb.chan) + ">\n";
      for (const Step& step : tb.steps) {
        xml += "      <step" + attr("s", step.s) + attr("type", std::string(to_string(step.type))) +
               attr("srcbuf", step.srcbuf) + attr("srcoff", step.srcoff) +
               attr("dstbuf", step.dstbuf) + attr("dstoff", step.dstoff) + attr("cnt", step.cnt) +
               attr("depid", step.depid) + attr("deps", step.deps) + attr("hasdep", step.hasdep ? 1 : 0) + "/>\n";
      }
      xml += "    </tb>\n";
    }
    xml += "  </gpu>\n";
  }
  return xml + "</algo>\n";
}

}  // namespace msccl

// A chorus schedule as an MSCCL XML algorithm (msccl::from_schedule, then msccl::to_xml). Throws
// chorus::Error (unsupported) naming the schedule and the reason when the format cannot express it.
inline std::string to_msccl_xml(const Schedule& schedule, const msccl::ExportOptions& options = {}) {
  return msccl::to_xml(msccl::from_schedule(schedule, options));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
