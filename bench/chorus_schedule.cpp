// chorus-schedule: prints any schedule chorus has, for reading and for the docs' pictures.
//   collectives: chorus-schedule --collective all_reduce --algo ring --ranks 4 --count 8 [--export-msccl OUT.xml]
//   pipelines:   chorus-schedule --pipeline gpipe|1f1b|interleaved|zb-h1 --stages 4 --microbatches 8 [--chunks 2]
//   MSCCL XML:   chorus-schedule --msccl FILE.xml [--count N]
// as a table (stdout, the default), JSON (--json, stdout) or an SVG picture (--svg FILE); --export-msccl
// writes a collective's schedule as an MSCCL XML algorithm instead. Pipelines are simulated with unit-time
// actions (F = B = 1, I = W = 1). An MSCCL program is verified first: "verified: ..." and exit status 0, or
// "not verified: <reason>" and exit status 1. Exit status 2 on a usage error or a malformed file, with
// "chorus-schedule: error: ..." on stderr, as chorus-bench.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <chorus/algo/build.hpp>
#include <chorus/algo/msccl.hpp>
#include <chorus/algo/printer.hpp>
#include <chorus/bench/names.hpp>
#include <chorus/parallel/pipeline_printer.hpp>
#include <chorus/parallel/pipeline_schedule.hpp>
#include <chorus/parallel/pipeline_simulator.hpp>

#include "schedule_svg.hpp"

namespace {

namespace algo = chorus::algo;
namespace parallel = chorus::parallel;
using Json = nlohmann::ordered_json;  // keys in the documented order

chorus::Error usage_error(const std::string& message) {
  return chorus::Error(chorus::ErrorCode::invalid_argument, message);
}

struct CollectiveRequest {
  std::string collective = "all_reduce";
  std::string algorithm;  // empty: the collective's first pattern
  int ranks = 4;
  std::size_t count = 8;
  int root = 0;
  bool root_given = false;
  bool in_place = false;
  std::size_t slice = 0;
};

struct PipelineRequest {
  std::string name;
  int stages = 4;
  int microbatches = 8;
  int chunks = 2;  // interleaved only
};

// "1F1B", "zb_h1" and "ZBH1" are all fine: case, '-' and '_' do not matter.
std::string fold(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != '-' && c != '_') out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

parallel::PipelineKind parse_pipeline(const std::string& text) {
  using K = parallel::PipelineKind;
  for (K kind : {K::gpipe, K::one_f_one_b, K::interleaved_1f1b, K::zb_h1}) {
    if (fold(text) == fold(parallel::to_string(kind))) return kind;
  }
  if (fold(text) == "interleaved1f1b") return K::interleaved_1f1b;
  throw usage_error("unknown pipeline schedule \"" + text + "\" (choose from gpipe, 1f1b, interleaved, zb-h1)");
}

// Without --algo: the first pattern algorithm_choices() lists after automatic.
chorus::Algorithm default_algorithm(chorus::Collective collective) {
  switch (collective) {
    case chorus::Collective::broadcast:
    case chorus::Collective::reduce: return chorus::Algorithm::chain;
    case chorus::Collective::all_to_all: return chorus::Algorithm::pairwise;
    default: return chorus::Algorithm::ring;
  }
}

algo::Schedule build_collective(const CollectiveRequest& request) {
  const chorus::Collective collective = chorus::bench::parse_collective(request.collective);
  const chorus::Algorithm algorithm =
      request.algorithm.empty() ? default_algorithm(collective) : chorus::bench::parse_algorithm(request.algorithm);
  if (algorithm == chorus::Algorithm::automatic) {
    const std::string choices = chorus::algorithm_choices(collective);  // "automatic, ring, ..."
    throw usage_error("--algo automatic is chosen at run time by the tuner and has no fixed schedule; name a pattern (" +
                      choices.substr(choices.find(", ") + 2) + ")");
  }
  if (!chorus::supports(collective, algorithm)) {
    throw usage_error(std::string("--algo ") + chorus::to_string(algorithm) + " does not implement " +
                      chorus::to_string(collective) + " (choose from " + chorus::algorithm_choices(collective) + ")");
  }
  const bool rooted = chorus::traits(collective).rooted;
  if (request.root_given && !rooted) {
    throw usage_error(std::string("--root applies to broadcast and reduce, not ") + chorus::to_string(collective));
  }
  if (rooted && (request.root < 0 || request.root >= request.ranks)) {
    throw usage_error("--root " + std::to_string(request.root) + " is out of range for " +
                      std::to_string(request.ranks) + " ranks");
  }
  // Far more slices than anyone can read is a typo, not a schedule worth gigabytes.
  if (request.slice != 0 && request.count / request.slice > 4096) {
    throw usage_error("--slice " + std::to_string(request.slice) + " cuts --count " + std::to_string(request.count) +
                      " into more than 4096 slices");
  }
  algo::Options options;
  options.slice = request.slice;
  options.in_place = request.in_place;
  return algo::build(collective, algo::pattern_for(algorithm), request.ranks, request.count, rooted ? request.root : 0,
                     options);
}

Json span_json(algo::Span span) { return Json{{"buffer", algo::to_string(span.buffer)}, {"offset", span.offset}}; }

// One object per step, rank by rank, with the round the SVG draws it in.
Json collective_json(const algo::Schedule& schedule) {
  const auto rounds = schedule_svg::step_rounds(schedule);
  Json doc;
  doc["collective"] = chorus::to_string(schedule.collective);
  doc["algorithm"] = algo::to_string(schedule.pattern);
  doc["ranks"] = schedule.ranks;
  doc["count"] = schedule.count;
  if (chorus::traits(schedule.collective).rooted) doc["root"] = schedule.root;
  doc["in_place"] = schedule.in_place;
  doc["scratch_count"] = schedule.scratch_count;
  doc["rounds"] = schedule_svg::round_count(rounds);
  doc["steps"] = Json::array();
  for (std::size_t rank = 0; rank < schedule.steps.size(); ++rank) {
    Json list = Json::array();
    for (std::size_t i = 0; i < schedule.steps[rank].size(); ++i) {
      const algo::Step& step = schedule.steps[rank][i];
      const bool remote = step.op == algo::Op::send || algo::is_recv(step.op);
      list.push_back(Json{{"op", algo::to_string(step.op)},
                          {"peer", remote ? Json(step.peer) : Json(nullptr)},
                          {"count", step.count},
                          {"src", step.op != algo::Op::recv_copy ? span_json(step.src) : Json(nullptr)},
                          {"dst", algo::writes(step.op) ? span_json(step.dst) : Json(nullptr)},
                          {"round", rounds[rank][i]}});
    }
    doc["steps"].push_back(list);
  }
  return doc;
}

// Unit-time simulation: the contract's F = B = 1 (and I = W = 1).
parallel::PipelineTimeline simulate(const parallel::PipelineSchedule& schedule) {
  return parallel::simulate_pipeline(schedule, parallel::PipelineCosts{1, 1, 1, 1});
}

bool show_chunk(const parallel::PipelineSchedule& schedule) {
  return schedule.kind == parallel::PipelineKind::interleaved_1f1b;
}

// Whole numbers print as integers ("makespan": 22), the rest as doubles.
Json number(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) return Json(static_cast<long long>(value));
  return Json(value);
}

// Issue 9's contract: {"schedule","stages","microbatches","chunks","actions","makespan",
// "bubble_fraction","peak_in_flight"}, in that order.
Json pipeline_json(const parallel::PipelineSchedule& schedule, const parallel::PipelineTimeline& timeline) {
  Json doc;
  doc["schedule"] = parallel::to_string(schedule.kind);
  doc["stages"] = schedule.stages;
  doc["microbatches"] = schedule.microbatches;
  doc["chunks"] = schedule.chunks;
  doc["actions"] = Json::array();
  for (const auto& list : schedule.actions) {
    Json names = Json::array();
    for (const parallel::PipelineAction& action : list) names.push_back(parallel::to_string(action, show_chunk(schedule)));
    doc["actions"].push_back(names);
  }
  doc["makespan"] = number(timeline.makespan);
  doc["bubble_fraction"] = timeline.bubble_fraction;
  doc["peak_in_flight"] = timeline.peak_in_flight;
  return doc;
}

std::string pipeline_title(const parallel::PipelineSchedule& schedule, const parallel::PipelineTimeline& timeline) {
  char bubble[32];
  std::snprintf(bubble, sizeof bubble, "%.1f%%", 100 * timeline.bubble_fraction);
  auto many = [](int n, const char* one, const char* more) { return std::to_string(n) + (n == 1 ? one : more); };
  std::string title = std::string(parallel::to_string(schedule.kind)) + ": " + many(schedule.stages, " stage", " stages") + ", " +
                      many(schedule.microbatches, " microbatch", " microbatches");
  if (schedule.chunks > 1) title += ", " + std::to_string(schedule.chunks) + " chunks per stage";
  title += schedule.splits_backward() ? " (F = I = W = 1)" : " (F = B = 1)";
  return title + ": makespan " + schedule_svg::detail::num(timeline.makespan) + ", bubble " + bubble;
}

// The title line, a row per stage (peak in-flight, idle time, the ordered actions), then the
// simulated timeline in ASCII.
std::string pipeline_table(const parallel::PipelineSchedule& schedule, const parallel::PipelineTimeline& timeline) {
  std::string text = pipeline_title(schedule, timeline) + "\n";
  text += "bubble fraction " + schedule_svg::detail::num(timeline.bubble_fraction) + "\n";
  text += "stage  peak  idle  actions\n";
  for (int r = 0; r < schedule.stages; ++r) {
    const auto i = static_cast<std::size_t>(r);
    char head[64];
    std::snprintf(head, sizeof head, "%5d  %4d  %4s ", r, timeline.peak_in_flight[i],
                  schedule_svg::detail::num(timeline.idle[i]).c_str());
    text += head;
    for (const parallel::PipelineAction& action : schedule.actions[i]) {
      text += " " + parallel::to_string(action, show_chunk(schedule));
    }
    text += "\n";
  }
  text += "\ntimeline (one cell per unit of time, blank: idle";
  text += schedule.chunks == 2 ? "; lower case: chunk 1)\n" : schedule.chunks > 2 ? "; leading digit: chunk)\n" : ")\n";
  return text + parallel::format_pipeline_timeline(timeline, schedule.chunks);
}

// An imported program's title: the schedule's summary with the file's name where a pattern's would be
// ("all_reduce msccl ring_allreduce_4, 4 ranks, count 4, in place, scratch 8").
std::string msccl_summary(const algo::Schedule& schedule, const algo::msccl::Program& program) {
  const std::string line = algo::summary(schedule);
  const std::string pattern = std::string(chorus::to_string(schedule.collective)) + " " + algo::to_string(schedule.pattern);
  return std::string(chorus::to_string(schedule.collective)) + " msccl " +
         (program.name.empty() ? std::string("(unnamed)") : program.name) + line.substr(pattern.size());
}

// The smallest count the program takes: one element per chunk.
std::size_t msccl_default_count(const algo::msccl::Program& program) {
  const int per_rank = program.nchunksperloop / program.ngpus;
  return program.coll == chorus::Collective::all_reduce ? static_cast<std::size_t>(program.nchunksperloop)
                                                        : static_cast<std::size_t>(per_rank > 0 ? per_rank : 1);
}

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file) throw usage_error("cannot read the MSCCL program " + path);
  return text.str();
}

void write_text(const std::string& path, const std::string& text, const char* what) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream file(path);
  file << text;
  if (!file.flush()) throw usage_error(std::string("cannot write ") + what + " to " + path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-schedule: prints a collective algorithm's or a pipeline's schedule as a table (default), "
               "JSON (--json) or an SVG picture (--svg FILE).\n"
               "Pipelines are simulated with unit-time actions (F = B = 1, I = W = 1). Exit status: 0 done, 2 error."};
  CollectiveRequest coll;
  PipelineRequest pipe;
  std::string svg_path;
  bool json = false;
  auto* collective_opt = app.add_option("--collective", coll.collective,
                                        std::string("collective: ") + chorus::bench::kCollectiveChoices);
  auto* algo_opt = app.add_option("--algo", coll.algorithm,
                                  "algorithm (default: ring; broadcast, reduce: chain; all_to_all: pairwise): "
                                  "all_reduce: ring, tree, halving_doubling, one_shot, two_shot; reduce_scatter, "
                                  "all_gather: ring, direct; broadcast, reduce: chain, binomial; all_to_all: pairwise");
  auto* ranks_opt = app.add_option("--ranks", coll.ranks, "ranks")->capture_default_str()->check(CLI::Range(1, 1024));
  auto* count_opt = app.add_option("--count", coll.count, "element count, as passed to the collective call")
                        ->capture_default_str()
                        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  auto* root_opt = app.add_option("--root", coll.root, "root rank of broadcast and reduce")->capture_default_str();
  auto* in_place_opt = app.add_flag("--in-place", coll.in_place, "the in-place form of the schedule");
  auto* slice_opt = app.add_option("--slice", coll.slice, "pipelining slice in elements (0: whole chunks)")
                        ->capture_default_str()
                        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  auto* pipeline_opt = app.add_option("--pipeline", pipe.name, "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1");
  auto* stages_opt = app.add_option("--stages", pipe.stages, "pipeline stages (p)")->capture_default_str();
  auto* microbatches_opt = app.add_option("--microbatches", pipe.microbatches, "microbatches (m)")->capture_default_str();
  auto* chunks_opt =
      app.add_option("--chunks", pipe.chunks, "model chunks per stage (v), interleaved only")->capture_default_str();
  const std::vector<CLI::Option*> collective_only = {algo_opt, ranks_opt, count_opt, root_opt, in_place_opt, slice_opt};
  const std::vector<CLI::Option*> pipeline_only = {stages_opt, microbatches_opt, chunks_opt};
  std::string msccl_path, export_path, msccl_name, msccl_proto = "Simple";
  auto* msccl_opt = app.add_option("--msccl", msccl_path,
                                   "read, verify and print an MSCCL XML algorithm (exit status 1 when not verified)");
  auto* export_opt = app.add_option("--export-msccl", export_path,
                                    "write the collective's schedule as an MSCCL XML algorithm to FILE (- for stdout) "
                                    "instead of printing the table");
  auto* msccl_name_opt = app.add_option("--msccl-name", msccl_name, "with --export-msccl: the algorithm's name "
                                                                    "(default chorus_<algo>_<collective>_<ranks>)");
  auto* msccl_proto_opt = app.add_option("--msccl-proto", msccl_proto, "with --export-msccl: the protocol")
                              ->capture_default_str()
                              ->check(CLI::IsMember({"Simple", "LL", "LL128"}));
  app.add_flag("--json", json, "print JSON instead of the table");
  app.add_option("--svg", svg_path, "write an SVG picture to FILE (- for stdout) instead of printing the table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-schedule: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }

  try {
    const bool is_collective = collective_opt->count() > 0, is_pipeline = pipeline_opt->count() > 0;
    const bool is_msccl = msccl_opt->count() > 0;
    if (is_collective + is_pipeline + is_msccl != 1) {
      throw usage_error(is_collective || is_pipeline || is_msccl
                            ? "give one of --collective, --pipeline and --msccl"
                            : "nothing to print: give --collective NAME, --pipeline NAME or --msccl FILE");
    }
    if (is_msccl) {
      for (CLI::Option* option : pipeline_only) {
        if (option->count() > 0) throw usage_error(option->get_name() + " applies to --pipeline");
      }
      for (CLI::Option* option : collective_only) {
        if (option != count_opt && option->count() > 0) {
          throw usage_error(option->get_name() + " applies to --collective (an MSCCL program fixes it)");
        }
      }
    } else {
      for (CLI::Option* option : is_collective ? pipeline_only : collective_only) {
        if (option->count() > 0) {
          throw usage_error(option->get_name() + " applies to " + (is_collective ? "--pipeline" : "--collective"));
        }
      }
    }
    for (CLI::Option* option : {export_opt, msccl_name_opt, msccl_proto_opt}) {
      if (!is_collective && option->count() > 0) throw usage_error(option->get_name() + " applies to --collective");
    }
    if ((msccl_name_opt->count() > 0 || msccl_proto_opt->count() > 0) && export_opt->count() == 0) {
      throw usage_error("--msccl-name and --msccl-proto apply to --export-msccl");
    }
    if (json && svg_path == "-") throw usage_error("--json and --svg - both want stdout; give --svg a file");
    if (export_path == "-" && (json || svg_path == "-")) {
      throw usage_error("--export-msccl - wants stdout, as --json and --svg - do; give it a file");
    }

    if (is_msccl) {
      // Malformed input throws (exit status 2, the message names the element and line); a program that
      // reads but is wrong is "not verified" (exit status 1).
      const algo::msccl::Program program = algo::parse_msccl(read_text(msccl_path));
      const algo::msccl::Verification verdict = algo::msccl::verify_msccl(program);
      if (!verdict.ok) {
        std::cout << "not verified: " << verdict.reason << "\n";
        return 1;
      }
      const algo::Schedule schedule =
          algo::msccl::to_schedule(program, count_opt->count() > 0 ? coll.count : msccl_default_count(program));
      const std::string title = msccl_summary(schedule, program);
      const std::string verified = "verified: " + program.coll_name + " on " + std::to_string(program.ngpus) +
                                   " ranks, " + std::to_string(verdict.steps) + " steps, needs " +
                                   std::to_string(verdict.buffering) + " buffered messages per connection";
      if (!svg_path.empty()) {
        std::string svg = schedule_svg::collective_svg(schedule);
        const std::string summary = algo::summary(schedule);
        if (const std::size_t at = svg.find(summary); at != std::string::npos) svg.replace(at, summary.size(), title);
        write_text(svg_path, svg, "SVG");
      }
      if (json) {
        Json doc = collective_json(schedule);
        doc["algorithm"] = "msccl";
        doc["msccl"] = Json{{"name", program.name},
                            {"protocol", algo::msccl::to_string(program.proto)},
                            {"nchunksperloop", program.nchunksperloop},
                            {"nchannels", program.nchannels},
                            {"verified", true},
                            {"program_steps", verdict.steps},
                            {"buffering", verdict.buffering}};
        std::cout << doc.dump(2) << "\n";
        std::cerr << verified << "\n";  // stdout stays one JSON document
      } else {
        if (svg_path.empty()) {
          const std::string table = algo::to_table(schedule);
          std::cout << title << table.substr(table.find('\n'));
        }
        std::cout << verified << "\n";
      }
      return 0;
    }

    std::string table, svg;
    Json doc;
    if (is_collective) {
      coll.root_given = root_opt->count() > 0;
      const algo::Schedule schedule = build_collective(coll);
      if (!export_path.empty()) {
        algo::msccl::ExportOptions options;
        options.name = msccl_name;
        options.protocol = msccl_proto == "LL" ? algo::msccl::Protocol::ll
                           : msccl_proto == "LL128" ? algo::msccl::Protocol::ll128
                                                    : algo::msccl::Protocol::simple;
        write_text(export_path, algo::to_msccl_xml(schedule, options), "the MSCCL XML");
      }
      table = algo::to_table(schedule);
      if (json) doc = collective_json(schedule);
      if (!svg_path.empty()) svg = schedule_svg::collective_svg(schedule);
    } else {
      const parallel::PipelineKind kind = parse_pipeline(pipe.name);
      const bool interleaved = kind == parallel::PipelineKind::interleaved_1f1b;
      if (!interleaved && chunks_opt->count() > 0 && pipe.chunks != 1) {
        throw usage_error("--chunks applies to --pipeline interleaved only");
      }
      const int chunks = interleaved ? pipe.chunks : 1;
      const parallel::PipelineSchedule schedule =
          parallel::make_pipeline_schedule(kind, pipe.stages, pipe.microbatches, chunks);
      const parallel::PipelineTimeline timeline = simulate(schedule);
      table = pipeline_table(schedule, timeline);
      if (json) doc = pipeline_json(schedule, timeline);
      if (!svg_path.empty()) svg = schedule_svg::pipeline_svg(schedule, timeline, pipeline_title(schedule, timeline));
    }
    if (!svg_path.empty()) write_text(svg_path, svg, "SVG");
    if (json) {
      std::cout << doc.dump(2) << "\n";
    } else if (svg_path.empty() && export_path.empty()) {
      std::cout << table;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "chorus-schedule: error: %s\n", e.what());
    return 2;
  }
}
