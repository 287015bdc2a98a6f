// parse_msccl: an MSCCL XML algorithm (msccl-tools' output, msccl-executor-nccl's input) read into a
// msccl::Program. It checks what makes a file unreadable or ambiguous for the executor: required
// attributes, step types, buffer names, id ranges, one thread block per connection, step and
// dependency references, buffer bounds. Whether the program is right (no deadlock, no race, the
// collective's result) is the verifier's question, not this one. Every error names the element and
// its line. No I/O: the caller reads the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"
#include "program.hpp"
#include "xml_reader.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo {

namespace msccl::detail {

constexpr int kMaxGpus = 1 << 16;
constexpr int kMaxChannels = 1 << 16;

// An attribute value as quoted in a message: bounded, control bytes shown as '?'.
inline std::string quoted(std::string_view value) {
  std::string out = "\"";
  for (std::size_t i = 0; i < value.size() && i < 32; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    out += c < 0x20 || c == 0x7F ? '?' : value[i];
  }
  return out + (value.size() > 32 ? "...\"" : "\"");
}

inline std::string gpu_tag(int id) { return "<gpu id=\"" + std::to_string(id) + "\">"; }
inline std::string tb_path(int gpu, int tb) { return "<tb id=\"" + std::to_string(tb) + "\"> of " + gpu_tag(gpu); }
inline std::string step_path(int gpu, int tb, int s) {
  return "<step s=\"" + std::to_string(s) + "\"> in " + tb_path(gpu, tb);
}

// One element being read: its attributes, and errors that name it.
class Attributes {
 public:
  Attributes(const XmlElement& element, std::string path) : element_(element), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const { fail_at_line(element_.line, path_ + ": " + what); }
  const std::string& path() const { return path_; }
  int line() const { return element_.line; }

  const std::string* find(const char* key) const { return element_.attribute(key); }
  const std::string& text(const char* key) const {
    const std::string* value = element_.attribute(key);
    if (!value) fail(std::string("missing attribute ") + key);
    return *value;
  }
  // A decimal integer in [low, high]; `expected` says what the range means.
  std::int64_t integer(const char* key, std::int64_t low, std::int64_t high, const char* expected) const {
    const std::string& value = text(key);
    std::size_t i = value.size() > 0 && value[0] == '-' ? 1 : 0;
    if (i == value.size()) fail(std::string("attribute ") + key + "=" + msccl::detail::quoted(value) + " is not an integer");
    std::int64_t magnitude = 0;
    for (; i < value.size(); ++i) {
      if (value[i] < '0' || value[i] > '9' || magnitude > (std::int64_t{1} << 40)) {
        fail(std::string("attribute ") + key + "=" + msccl::detail::quoted(value) + " is not an integer of at most 12 digits");
      }
      magnitude = magnitude * 10 + (value[i] - '0');
    }
    const std::int64_t number = value[0] == '-' ? -magnitude : magnitude;
    if (number < low || number > high) {
      fail(std::string("attribute ") + key + "=" + msccl::detail::quoted(value) + " is out of range: expected " + expected);
    }
    return number;
  }
  int number(const char* key, int low, int high, const char* expected) const {
    return static_cast<int>(integer(key, low, high, expected));
  }
  bool flag(const char* key) const { return integer(key, 0, 1, "0 or 1") == 1; }

 private:
  const XmlElement& element_;
  std::string path_;
};

constexpr int kIntMax = std::numeric_limits<int>::max();

inline void only_children(const XmlElement& parent, const std::string& path, const char* child) {
  for (const XmlElement& element : parent.children) {
    if (element.name != child) {
      fail_at_line(element.line, "<" + element.name + "> inside " + path + ": only <" + child + "> elements belong there");
    }
  }
}

inline Collective collective_named(const Attributes& algo, const std::string& name) {
  if (name == "allreduce") return Collective::all_reduce;
  if (name == "allgather") return Collective::all_gather;
  if (name == "reduce_scatter" || name == "reducescatter") return Collective::reduce_scatter;
  if (name == "alltoall") return Collective::all_to_all;
  for (const char* known : {"reduce", "broadcast", "send", "recv", "gather", "scatter", "alltoallv"}) {
    if (name == known) {
      throw Error(ErrorCode::unsupported,
                  chorus::detail::concat(kParseCall, ": line ", algo.line(), ": ", algo.path(), ": coll=",
                                         msccl::detail::quoted(name), " is not imported yet (allreduce, allgather, "
                                         "reduce_scatter or reducescatter, alltoall are)"));
    }
  }
  algo.fail("unknown collective coll=" + msccl::detail::quoted(name) +
            " (expected allreduce, allgather, reduce_scatter or reducescatter, alltoall)");
}

inline Protocol protocol_named(const Attributes& algo, const std::string& name) {
  if (name == "Simple") return Protocol::simple;
  if (name == "LL") return Protocol::ll;
  if (name == "LL128") return Protocol::ll128;
  algo.fail("unknown protocol proto=" + msccl::detail::quoted(name) + " (expected Simple, LL or LL128)");
}

inline Buffer buffer_named(const Attributes& step, const char* key) {
  const std::string& name = step.text(key);
  if (name == "i") return Buffer::input;
  if (name == "o") return Buffer::output;
  if (name == "s") return Buffer::scratch;
  step.fail(std::string("unknown buffer ") + key + "=" + msccl::detail::quoted(name) + " (expected i, o or s)");
}

inline StepType step_type_named(const Attributes& step) {
  const std::string& name = step.text("type");
  for (StepType type : kStepTypes) {
    if (name == to_string(type)) return type;
  }
  step.fail("unknown step type type=" + msccl::detail::quoted(name) + " (the executor accepts s, r, rcs, rrc, rrs, rrcs, cpy, re, nop)");
}

// A side (src or dst) the step uses on its own rank must lie inside that buffer.
inline void check_span(const Attributes& at, const Gpu& gpu, const Step& step, bool src) {
  const char* off_key = src ? "srcoff" : "dstoff";
  const Buffer buffer = src ? step.srcbuf : step.dstbuf;
  const int offset = src ? step.srcoff : step.dstoff;
  const char letter = buffer_letter(buffer);
  if (offset < 0) {
    at.fail(std::string("negative ") + off_key + "=\"" + std::to_string(offset) + "\", but a " + to_string(step.type) +
            " step uses its " + (src ? "source" : "destination"));
  }
  const std::int64_t end = std::int64_t{offset} + step.cnt;
  if (end > gpu.chunks(buffer)) {
    at.fail(std::string(off_key) + " + cnt = " + std::to_string(end) + " is past the end of buffer " + letter + " (" +
            letter + "_chunks=\"" + std::to_string(gpu.chunks(buffer)) + "\" on " + gpu_tag(gpu.id) + ")");
  }
}

inline Step read_step(const XmlElement& element, const Gpu& gpu, const ThreadBlock& tb, int position) {
  std::string path = "<step> in " + tb_path(gpu.id, tb.id);
  if (const std::string* s = element.attribute("s")) path = "<step s=" + msccl::detail::quoted(*s) + "> in " + tb_path(gpu.id, tb.id);
  const Attributes at(element, path);
  if (!element.children.empty()) fail_at_line(element.children[0].line, "<" + element.children[0].name + "> inside " + path + ": a <step> holds no elements");
  for (const char* key : {"s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep"}) {
    at.text(key);  // all ten are required by the executor: name the first one missing
  }
  Step step;
  step.line = element.line;
  step.s = at.number("s", 0, kIntMax, "a step index, 0 or more");
  if (step.s != position) {
    at.fail("step index s=\"" + std::to_string(step.s) + "\" where " + std::to_string(position) +
            " was expected: the steps of a thread block are numbered 0..n-1 in order");
  }
  step.type = step_type_named(at);
  step.srcbuf = buffer_named(at, "srcbuf");
  step.dstbuf = buffer_named(at, "dstbuf");
  step.cnt = at.number("cnt", 0, kIntMax, "a chunk count, 0 or more (negative counts are refused)");
  step.srcoff = at.number("srcoff", -1, kIntMax, "a chunk offset, 0 or more, or -1 where unused");
  step.dstoff = at.number("dstoff", -1, kIntMax, "a chunk offset, 0 or more, or -1 where unused");
  step.depid = at.number("depid", -1, kIntMax, "a thread block of this gpu, or -1 for none");
  step.deps = at.number("deps", -1, kIntMax, "a step index of that thread block, or -1 for none");
  step.hasdep = at.flag("hasdep");
  if (reads_src(step.type)) check_span(at, gpu, step, true);
  if (writes_dst(step.type)) check_span(at, gpu, step, false);
  if (sends(step.type) && tb.send < 0) {
    at.fail(std::string("a ") + to_string(step.type) + " step sends, but its thread block has send=\"-1\" (line " +
            std::to_string(tb.line) + ")");
  }
  if (receives(step.type) && tb.recv < 0) {
    at.fail(std::string("a ") + to_string(step.type) + " step receives, but its thread block has recv=\"-1\" (line " +
            std::to_string(tb.line) + ")");
  }
  if (step.depid >= 0 && step.deps < 0) at.fail("depid=\"" + std::to_string(step.depid) + "\" with deps=\"-1\"");
  return step;
}

inline ThreadBlock read_thread_block(const XmlElement& element, const Program& program, const Gpu& gpu) {
  std::string path = "<tb> of " + gpu_tag(gpu.id);
  if (const std::string* id = element.attribute("id")) path = "<tb id=" + msccl::detail::quoted(*id) + "> of " + gpu_tag(gpu.id);
  const Attributes at(element, path);
  ThreadBlock tb;
  tb.line = element.line;
  tb.id = at.number("id", 0, kIntMax, "a thread-block id, 0 or more");
  const std::string peers = "a gpu in 0.." + std::to_string(program.ngpus - 1) + ", or -1 for none";
  tb.send = at.number("send", -1, program.ngpus - 1, peers.c_str());
  tb.recv = at.number("recv", -1, program.ngpus - 1, peers.c_str());
  if (tb.send == gpu.id || tb.recv == gpu.id) {
    at.fail("a thread block of gpu " + std::to_string(gpu.id) + " cannot send to or receive from itself");
  }
  const std::string channels = "a channel in 0.." + std::to_string(program.nchannels - 1) + " (nchannels=\"" +
                               std::to_string(program.nchannels) + "\")";
  tb.chan = at.number("chan", 0, program.nchannels - 1, channels.c_str());
  only_children(element, path, "step");
  // The executor hangs the dependencies of a run of nops on the step after it, and refuses the file
  // when that step has no depid of its own (its dependency list would start at the wrong place).
  int nop_dependency_line = 0;
  for (const XmlElement& child : element.children) {
    const Step& step = tb.steps.emplace_back(read_step(child, gpu, tb, static_cast<int>(tb.steps.size())));
    if (step.type == StepType::nop) {
      if (step.depid >= 0 && nop_dependency_line == 0) nop_dependency_line = step.line;
      continue;
    }
    if (nop_dependency_line != 0 && step.depid < 0) {
      fail_at_line(step.line, step_path(gpu.id, tb.id, step.s) + ": follows nop steps with dependencies (from line " +
                                  std::to_string(nop_dependency_line) +
                                  ") but has depid=\"-1\": the executor needs the step after such nops to carry a "
                                  "dependency of its own");
    }
    nop_dependency_line = 0;
  }
  return tb;
}

// Puts items (Gpu or ThreadBlock) at index == id, refusing duplicates and gaps in 0..required-1.
template <class Item>
std::vector<Item> place_by_id(std::vector<Item> items, int required, const std::string& item_tag,
                              const std::function<std::string(int)>& path_of, int parent_line,
                              const std::string& parent_path) {
  std::vector<int> where(static_cast<std::size_t>(required), -1);
  for (std::size_t k = 0; k < items.size(); ++k) {
    const int id = items[k].id;
    if (id >= required) continue;
    if (where[id] >= 0) {
      fail_at_line(items[k].line, path_of(id) + ": a second " + item_tag + " with id " + std::to_string(id) +
                                      " (the first is on line " + std::to_string(items[where[id]].line) + ")");
    }
    where[id] = static_cast<int>(k);
  }
  int missing = -1;
  for (int id = 0; id < required && missing < 0; ++id) missing = where[id] < 0 ? id : -1;
  if (missing >= 0) {
    for (const Item& item : items) {
      if (item.id >= required) {  // an id past the end: the gap is the missing one
        fail_at_line(item.line, path_of(item.id) + ": ids must be 0..n-1 without a gap, and id " +
                                    std::to_string(missing) + " is missing");
      }
    }
    fail_at_line(parent_line, parent_path + ": no " + item_tag + " with id " + std::to_string(missing) +
                                  " (ids must be 0.." + std::to_string(required - 1) + " without a gap)");
  }
  std::vector<Item> placed;
  placed.reserve(items.size());
  for (int id = 0; id < required; ++id) placed.push_back(std::move(items[where[id]]));
  return placed;
}

// One thread block per (peer, channel) and direction; every dependency names an existing step.
inline void check_gpu_links(const Gpu& gpu) {
  std::map<std::pair<int, int>, const ThreadBlock*> senders, receivers;
  for (const ThreadBlock& tb : gpu.thread_blocks) {
    for (auto [peer, table, verb] : {std::tuple{tb.send, &senders, "sends to"}, std::tuple{tb.recv, &receivers, "receives from"}}) {
      if (peer < 0) continue;
      auto [it, fresh] = table->emplace(std::pair{peer, tb.chan}, &tb);
      if (!fresh) {
        fail_at_line(tb.line, tb_path(gpu.id, tb.id) + ": " + verb + " gpu " + std::to_string(peer) + " on channel " +
                                  std::to_string(tb.chan) + ", as <tb id=\"" + std::to_string(it->second->id) +
                                  "\"> on line " + std::to_string(it->second->line) +
                                  " already does: one thread block per connection (peer, channel) and direction");
      }
    }
  }
  for (const ThreadBlock& tb : gpu.thread_blocks) {
    for (const Step& step : tb.steps) {
      if (step.depid < 0) continue;
      const std::string path = step_path(gpu.id, tb.id, step.s);
      if (step.depid >= static_cast<int>(gpu.thread_blocks.size())) {
        fail_at_line(step.line, path + ": depid=\"" + std::to_string(step.depid) + "\" names a thread block " +
                                    gpu_tag(gpu.id) + " does not have (it has " +
                                    std::to_string(gpu.thread_blocks.size()) + ")");
      }
      const ThreadBlock& other = gpu.thread_blocks[step.depid];
      if (step.deps >= static_cast<int>(other.steps.size())) {
        fail_at_line(step.line, path + ": deps=\"" + std::to_string(step.deps) + "\" names a step " +
                                    tb_path(gpu.id, other.id) + " does not have (it has " +
                                    std::to_string(other.steps.size()) + ")");
      }
    }
  }
}

inline Gpu read_gpu(const XmlElement& element, const Program& program) {
  std::string path = "<gpu>";
  if (const std::string* id = element.attribute("id")) path = "<gpu id=" + msccl::detail::quoted(*id) + ">";
  const Attributes at(element, path);
  Gpu gpu;
  gpu.line = element.line;
  const std::string ranks = "a rank in 0.." + std::to_string(program.ngpus - 1) + " (ngpus=\"" +
                            std::to_string(program.ngpus) + "\")";
  gpu.id = at.number("id", 0, program.ngpus - 1, ranks.c_str());
  gpu.i_chunks = at.number("i_chunks", 0, kIntMax, "a chunk count, 0 or more");
  gpu.o_chunks = at.number("o_chunks", 0, kIntMax, "a chunk count, 0 or more");
  gpu.s_chunks = at.number("s_chunks", 0, kIntMax, "a chunk count, 0 or more");
  only_children(element, path, "tb");
  std::vector<ThreadBlock> blocks;
  for (const XmlElement& child : element.children) blocks.push_back(read_thread_block(child, program, gpu));
  const int id = gpu.id;
  gpu.thread_blocks = place_by_id(
      std::move(blocks), static_cast<int>(element.children.size()), "<tb>",
      [id](int tb) { return tb_path(id, tb); }, element.line, gpu_tag(id));
  check_gpu_links(gpu);
  return gpu;
}

}  // namespace msccl::detail

// Reads an MSCCL XML algorithm. Throws chorus::Error (invalid_argument; unsupported for a collective
// the executor knows but chorus does not import yet) naming the element and its line.
inline msccl::Program parse_msccl(std::string_view xml) {
  using namespace msccl::detail;
  const XmlElement root = XmlReader(xml).read();
  if (root.name != "algo") fail_at_line(root.line, "the root element is <" + root.name + ">, expected <algo>");
  std::string path = "<algo>";
  if (const std::string* name = root.attribute("name")) path = "<algo name=" + msccl::detail::quoted(*name) + ">";
  const Attributes at(root, path);
  msccl::Program program;
  program.line = root.line;
  if (const std::string* name = at.find("name")) program.name = *name;
  program.ngpus = at.number("ngpus", 1, kMaxGpus, "1..65536 ranks");
  program.coll_name = at.text("coll");
  program.coll = collective_named(at, program.coll_name);
  program.proto = protocol_named(at, at.text("proto"));
  program.nchunksperloop = at.number("nchunksperloop", 1, kIntMax, "1 or more chunks");
  program.nchannels = at.number("nchannels", 1, kMaxChannels, "1..65536 channels");
  program.inplace = at.flag("inplace");
  program.outofplace = at.find("outofplace") ? at.flag("outofplace") : !program.inplace;
  if (const std::string* redop = at.find("redop")) program.redop = *redop;
  if (at.find("minBytes")) program.min_bytes = at.integer("minBytes", 0, std::int64_t{1} << 50, "0 or more bytes");
  if (at.find("maxBytes")) program.max_bytes = at.integer("maxBytes", 0, std::int64_t{1} << 50, "0 or more bytes");
  only_children(root, path, "gpu");
  std::vector<msccl::Gpu> gpus;
  for (const XmlElement& child : root.children) gpus.push_back(read_gpu(child, program));
  program.gpus = place_by_id(std::move(gpus), program.ngpus, "<gpu>", [](int id) { return gpu_tag(id); }, root.line, path);
  return program;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo
