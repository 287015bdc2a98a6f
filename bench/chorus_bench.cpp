// chorus-bench: nccl-tests' collective benchmark, over chorus backends. Same flags (-b -e -f -i
// -n -w -c -d -o -r), same table (out-of-place and in-place time, algbw, busbw, #wrong), same
// busbw factors (include/chorus/bench/bandwidth.hpp), same footer. Exits 1 if any value is wrong,
// 2 on a usage or runtime error.
//
// Differences from nccl-tests, each on purpose:
//   - ranks are threads of this process (--backend host, --ranks), or MPI processes (--backend mpi
//     or mpi-native, under mpirun), not MPI processes x -t threads x -g GPUs;
//   - without -n, the number of calls is chosen per size by time (--min-time, bench/sample_timing.hpp),
//     and the table gains a column of the counts; -n N keeps nccl-tests' exact meaning and table;
//   - -w defaults to 5 warm-up calls (older nccl-tests' default; current is 1): on a CPU backend
//     the first calls pay for page faults and waking sleeping threads;
//   - one binary for every collective (--collective) instead of one binary per collective;
//   - a call's time is the slowest rank's: the collective is done only when its last rank is.
//
// Additions, all off by default so the table stays nccl-tests' table: --predict (the cost model's
// time and busbw beside the measured ones, docs/cost-model.md), --csv FILE, --svg FILE (busbw
// against size), and progress on stderr while a sweep runs, when stderr is a terminal.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <chorus/core/config.hpp>
#include <chorus/bench.hpp>
#include <chorus/bootstrap/launch_env.hpp>
#include <chorus/host.hpp>
#include <chorus/model/automatic.hpp>
#include <chorus/model/predict.hpp>

#include "bench_backends.hpp"
#include "bench_json.hpp"
#include "bench_outputs.hpp"
#include "busbw_svg.hpp"
#include "host_calibration.hpp"
#include "sample_timing.hpp"
#include "sweep_cli.hpp"

namespace {

using chorus::Algorithm;
using chorus::DataType;
using chorus::ReduceOp;
using chorus::Collective;
namespace bench = chorus::bench;

struct Config {
  Collective collective = Collective::all_reduce;
  Algorithm algorithm = Algorithm::automatic;
  int ranks = 4;
  bench::SweepSpec sweep;
  sample_timing::Rule timing;
  int repeats = 1;  // samples per row; the median is reported, max/min beside it
  int check_iters = 1;
  std::vector<DataType> types;
  std::vector<ReduceOp> ops;
  std::vector<int> roots;
  std::string json_path;
  std::string csv_path;
  std::string svg_path;
  bool predict = false;
  bool automatic_model = false;  // --automatic model: Algorithm::automatic asks the calibrated cost model
  bool bind = true;              // --bind core: host threads and shm processes on CPUs in turn (bench/cpu_binding.hpp)
};

chorus::Error usage_error(const std::string& message) {
  return chorus::Error(chorus::ErrorCode::invalid_argument, message);
}

int default_ranks() {
  // Every rank is a thread that spins while it waits: more ranks than cores measures the scheduler.
  const auto cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores, 2, 8);
}

std::vector<int> parse_roots(const std::string& text, int ranks) {
  std::vector<int> roots;
  if (text == "all") {
    for (int r = 0; r < ranks; ++r) roots.push_back(r);
    return roots;
  }
  std::size_t used = 0;
  int root = -1;
  try {
    root = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) throw usage_error("-r expects a rank or \"all\", got \"" + text + "\"");
  if (root < 0 || root >= ranks) {
    throw usage_error("root " + text + " is out of range for " + std::to_string(ranks) + " ranks");
  }
  return {root};
}

// Memory that a correct call overwrites starts as this pattern, so a step that forgets to write
// its output cannot pass on a previous call's results. 0xA5 bytes are a NaN-free, never-expected
// value in every type the check uses.
template <class T>
void poison(T* data, std::size_t count) {
  if (count == 0) return;  // data may be null then, which memset does not allow
  std::memset(static_cast<void*>(data), 0xA5, count * sizeof(T));
}

using bench_backends::RankTimes;

// Where one placement's pointers lie. `memory` is everything a correct call may overwrite,
// poisoned before each check.
template <class T>
struct Placement {
  T* send;
  T* recv;
  T* memory;
  std::size_t memory_count;
};

// The maximum of x over the ranks, the same on every rank (sample_timing's agreement).
template <class Comm>
double agree_max(Comm& comm, double x) {
  double slowest = 0.0;
  comm.all_reduce(&x, &slowest, 1, ReduceOp::max);
  return slowest;
}

// Every --repeats sample of one placement: each rank's time per sample, the wrong values (in the first),
// and the counts each sample made (written by rank 0; every rank made the same).
struct Samples {
  std::vector<RankTimes> times;
  std::vector<int> warmup, iters, loops;
  std::vector<std::vector<double>> loop_seconds;
  Samples(int repeats, int ranks)
      : times(static_cast<std::size_t>(repeats), RankTimes(ranks)), warmup(repeats), iters(repeats), loops(repeats),
        loop_seconds(repeats) {}
};

// One placement of one row on one rank: `--repeats` samples (each warmed up and timed), then check
// `check_iters` times.
template <class T, class Comm>
void measure(Comm& comm, const Config& config, const bench::Check<T>& check, Placement<T> at,
             std::size_t count, ReduceOp op, int root, Samples& out) {
  const int rank = comm.rank();
  const auto call = [&] {
    bench::call_collective(comm, config.collective, at.send, at.recv, count, op, root, config.algorithm);
  };
  check.fill_input(rank, at.send);
  for (std::size_t r = 0; r < out.times.size(); ++r) {
    const sample_timing::Sample sample =
        sample_timing::time_calls(comm, config.timing, call, [&](double x) { return agree_max(comm, x); });
    out.times[r].seconds[rank] = sample.seconds;
    if (rank == 0) {
      out.warmup[r] = sample.warmup;
      out.iters[r] = sample.iters;
      out.loops[r] = sample.loops;
      out.loop_seconds[r] = sample.loop_seconds;
    }
  }
  for (int i = 0; i < config.check_iters; ++i) {
    poison(at.memory, at.memory_count);
    check.fill_input(rank, at.send);
    call();
    out.times[0].wrong[rank] += check.count_wrong(rank, at.recv);
  }
}

template <class T, class Backend>
bench::Row run_row(Backend& backend, const Config& config, std::size_t sweep_bytes, ReduceOp op, int root,
                   sample_timing::Counts& counts) {
  const int n = backend.ranks();
  const bench::Shape shape = bench::shape_of(config.collective, sweep_bytes, sizeof(T), n);
  const bench::Check<T> check(config.collective, op, n, root, shape.count);
  Samples out_of_place(config.repeats, n), in_place(config.repeats, n);
  backend.run([&](auto& comm) {
    {
      std::vector<T> send(shape.input_count), recv(shape.output_count);
      const Placement<T> apart{send.data(), recv.data(), recv.data(), recv.size()};
      measure(comm, config, check, apart, shape.count, op, root, out_of_place);
    }  // freed before the in-place buffer is allocated: peak memory stays at two buffers per rank
    const chorus::InPlaceBuffer layout = chorus::in_place_buffer(config.collective, comm.rank(), n, shape.count);
    std::vector<T> buffer(layout.buffer_count);
    const Placement<T> shared{buffer.data() + layout.send_offset, buffer.data() + layout.recv_offset, buffer.data(),
                              buffer.size()};
    measure(comm, config, check, shared, shape.count, op, root, in_place);
  });
  for (Samples* samples : {&out_of_place, &in_place}) {
    for (RankTimes& times : samples->times) backend.merge(times);
  }

  // Each sample's figure is its slowest rank's; the row reports the nearest-rank median sample (as
  // bench/chorus-compare does: a measured sample, never an average) and keeps every sample's.
  const auto combine = [&](const Samples& samples, int placement) {
    std::vector<double> slowest;
    for (const RankTimes& times : samples.times) slowest.push_back(*std::max_element(times.seconds.begin(), times.seconds.end()));
    std::vector<std::size_t> order(slowest.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return slowest[a] < slowest[b]; });
    const std::size_t median = order[(order.size() + 1) / 2 - 1];
    counts.warmup[placement] = samples.warmup[median];
    counts.iters[placement] = samples.iters[median];
    counts.loops[placement] = samples.loops[median];
    counts.loop_seconds[placement] = samples.loop_seconds[median];
    counts.samples_seconds[placement] = slowest;
    counts.samples_iters[placement] = samples.iters;
    std::optional<std::size_t> wrong;
    if (config.check_iters > 0) {
      wrong = 0;
      for (std::uint64_t w : samples.times[0].wrong) *wrong += static_cast<std::size_t>(w);
    }
    return bench::make_result(config.collective, n, shape.bytes, slowest[median], wrong);
  };
  bench::Row row;
  row.bytes = shape.bytes;
  row.elements = shape.elements;
  row.type = bench::nccl_name(chorus::data_type_v<T>);
  row.redop = chorus::traits(config.collective).reduces ? chorus::to_string(op) : "none";
  row.root = chorus::traits(config.collective).rooted ? root : -1;
  row.out_of_place = combine(out_of_place, 0);
  row.in_place = combine(in_place, 1);
  return row;
}

// `devices`: one line per rank, from the backend.
void print_preamble(const Config& config, const std::string& backend, int ranks, const std::vector<std::string>& devices,
                    const std::vector<std::size_t>& sizes, const std::string& model_line) {
  std::printf("# chorus-bench %s: %s on %s\n", CHORUS_VERSION_STRING, chorus::to_string(config.collective), backend.c_str());
  std::printf("# ranks %d", ranks);
  if (config.collective == Collective::all_reduce || config.algorithm != chorus::Algorithm::automatic) {
    std::printf(" algorithm %s", chorus::to_string(config.algorithm));
  }
  std::printf(" minBytes %zu maxBytes %zu", config.sweep.min_bytes, config.sweep.max_bytes);
  if (config.sweep.step_factor != 0) {
    std::printf(" step: %zu(factor)", config.sweep.step_factor);
  } else {
    std::printf(" step: %zu(bytes)", config.sweep.step_bytes);
  }
  std::printf(" %s validation: %d sizes: %zu", sample_timing::describe(config.timing).c_str(), config.check_iters,
              sizes.size());
  if (config.repeats > 1) std::printf(" repeats: %d (median; max/min in the last columns)", config.repeats);
  std::printf("\n");
  std::printf("#\n# Using devices\n");
  for (const std::string& line : devices) std::printf("#  %s\n", line.c_str());
  if (!model_line.empty()) std::printf("#\n# %s\n", model_line.c_str());
  std::string header = bench::table_header();
  if (config.predict) header = bench_outputs::header_with_prediction(header);
  if (config.timing.by_time()) header = sample_timing::header_with_calls(header);
  if (config.repeats > 1) header = sample_timing::header_with_spread(header);
  std::printf("#\n%s", header.c_str());
  std::fflush(stdout);
}

using Predictions = bench_json::Predictions;

void write_json(const Config& config, const std::string& backend, int ranks, const std::vector<bench::Row>& rows,
                const Predictions& predicted, const std::vector<sample_timing::Counts>& counts) {
  const bench_json::RunInfo info{"chorus-bench", CHORUS_VERSION_STRING, backend, chorus::to_string(config.collective),
                                 chorus::to_string(config.algorithm), ranks, config.timing, config.check_iters,
                                 config.repeats};
  bench_json::write(config.json_path, bench_json::document(info, rows, predicted, counts));
}

// The host backend's tuner under --automatic model: the cost model on the calibrated fabric.
chorus::model::AutomaticTuner host_tuner(const chorus::model::Fabric& fabric) {
  return chorus::model::AutomaticTuner([fabric](int) { return fabric; }, chorus::host::detail::Tuning::kSliceBytes);
}

// What the host backend runs for one row, priced by the cost model on the calibrated fabric:
// the pattern Algorithm::automatic resolves to (host/tuning.hpp's thresholds, or the model under
// --automatic model) and the backend's slice.
chorus::model::Prediction predict_host_row(const Config& config, const chorus::model::Fabric& fabric, DataType type,
                                           std::size_t sweep_bytes, int root) {
  const std::size_t element_size = chorus::size_of(type);
  const int n = fabric.ranks;
  const bench::Shape shape = bench::shape_of(config.collective, sweep_bytes, element_size, n);
  const chorus::Algorithm algorithm =
      config.algorithm != Algorithm::automatic ? config.algorithm
      : config.automatic_model
          ? host_tuner(fabric)(config.collective, shape.count, element_size, n)
          : chorus::algo::algorithm_of(
                chorus::host::detail::choose_pattern(config.collective, shape.count * element_size, n, n));
  chorus::model::PredictOptions options;
  options.slice = chorus::host::detail::slice_elements(element_size);
  options.root = root;
  return chorus::model::predict(fabric, config.collective, algorithm, shape.count, element_size, options);
}

template <class Backend>
int run(const Config& config, Backend& backend, const std::string& name,
        const std::optional<chorus::model::Fabric>& fabric = std::nullopt, const std::string& model_line = {}) {
  const std::vector<std::size_t> sizes = bench::size_sweep(config.sweep);
  const std::vector<std::string> devices = backend.devices();
  if (backend.prints()) print_preamble(config, backend.description(), backend.ranks(), devices, sizes, model_line);
  std::vector<bench::Row> rows;
  Predictions predicted;
  std::vector<sample_timing::Counts> counts;
  const std::vector<ReduceOp> ops = chorus::traits(config.collective).reduces ? config.ops : std::vector<ReduceOp>{ReduceOp::sum};
  const std::vector<int> roots = chorus::traits(config.collective).rooted ? config.roots : std::vector<int>{0};
  bench_outputs::Progress progress(config.types.size() * ops.size() * roots.size() * sizes.size());
  for (DataType type : config.types) {
    for (ReduceOp op : ops) {
      for (int root : roots) {
        for (std::size_t bytes : sizes) {
          if (backend.prints()) {
            progress.starting(rows.size(), chorus::to_string(config.collective), bytes,
                              bench::nccl_name(type) + (chorus::traits(config.collective).reduces
                                                            ? std::string(" ") + chorus::to_string(op) : std::string()));
          }
          chorus::visit_type(type, [&](auto tag) {
            counts.emplace_back();
            rows.push_back(run_row<decltype(tag)>(backend, config, bytes, op, root, counts.back()));
          });
          predicted.push_back(fabric ? std::optional(predict_host_row(config, *fabric, type, bytes, root)) : std::nullopt);
          if (backend.prints()) {
            std::string line = bench::format_row(rows.back());
            if (predicted.back()) line = bench_outputs::row_with_prediction(line, *predicted.back());
            if (config.timing.by_time()) line = sample_timing::row_with_calls(line, counts.back());
            if (config.repeats > 1) line = sample_timing::row_with_spread(line, counts.back());
            std::fputs(line.c_str(), stdout);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  if (backend.prints()) {
    std::fputs(bench::table_footer(rows).c_str(), stdout);
    if (!config.json_path.empty()) write_json(config, name, backend.ranks(), rows, predicted, counts);
    if (!config.csv_path.empty()) bench_outputs::write_csv(config.csv_path, rows, predicted);
    if (!config.svg_path.empty()) {
      const std::string label = std::string(chorus::to_string(config.algorithm));
      const std::string title = chorus::detail::concat("chorus-bench ", chorus::to_string(config.collective), ", ",
                                                       name, " backend, ", backend.ranks(), " ranks");
      bench_outputs::write_svg(config.svg_path, title, bench_outputs::plot_series(rows, predicted, label));
    }
  }
  return bench::total_wrong(rows) == 0 ? 0 : 1;
}

// A process backend's job size before it is set up (to check -r and --ranks): the launcher's
// (mpirun, chorus-run, torchrun, srun), or 1 for a program started alone.
int launched_ranks() {
  const chorus::bootstrap::LaunchInfo launch = chorus::bootstrap::launch_info();
  return launch.launcher == "none" ? 1 : launch.size;
}

#if defined(CHORUS_BENCH_MPI)
constexpr const char* kBackendChoices = "host, shm, mpi, mpi-native";
#else
constexpr const char* kBackendChoices = "host, shm (mpi and mpi-native: not in this build, which has no MPI)";
#endif

int run_on(const std::string& backend, const Config& config, bool ranks_given) {
  if (backend == "host") {
    std::optional<chorus::model::Fabric> fabric;
    std::string model_line;
    if (config.predict || config.automatic_model) {
      if (config.ranks < 2) {
        throw usage_error(std::string(config.predict ? "--predict" : "--automatic model") +
                          " needs at least 2 ranks (one rank sends no messages to time)");
      }
      const host_calibration::Calibration c = host_calibration::calibrate(config.ranks, CHORUS_VERSION_STRING);
      fabric = chorus::model::uniform_fabric(config.ranks, c.fit.alpha_us, c.fit.beta_GBps);
      model_line = chorus::detail::concat(config.predict ? "predicted" : "automatic", ": cost model on the host calibration alpha ", c.fit.alpha_us,
                                          " us beta ", c.fit.beta_GBps, " GB/s (",
                                          c.from_cache ? "cached in " : "measured now, cached in ",
                                          c.cache_path.empty() ? std::string("nowhere") : c.cache_path, ")");
    }
    bench_backends::HostBackend host(config.ranks, config.bind);
    if (config.automatic_model) {
      host.team().set_automatic(host_tuner(*fabric));
      if (config.predict) model_line += "; Algorithm::automatic asks this model (--automatic model)";
    }
    return run(config, host, backend, config.predict ? fabric : std::nullopt, model_line);
  }
  if (backend == "shm") {
    if (ranks_given && launched_ranks() != config.ranks) {
      throw usage_error("--ranks " + std::to_string(config.ranks) + " disagrees with the launcher's " +
                        std::to_string(launched_ranks()) + " processes (with --backend shm, chorus-run -n sets the ranks)");
    }
    bench_backends::ShmBackend shm(config.bind);
    return run(config, shm, backend);
  }
#if defined(CHORUS_BENCH_MPI)
  if (backend == "mpi" || backend == "mpi-native") {
    if (ranks_given && launched_ranks() != config.ranks) {
      throw usage_error("--ranks " + std::to_string(config.ranks) + " disagrees with the " +
                        std::to_string(launched_ranks()) + " MPI processes (with an MPI backend, mpirun -np sets the ranks)");
    }
    chorus::mpi::Session session;
    try {
      if (backend == "mpi") {
        bench_backends::MpiBackend<chorus::mpi::Comm> mpi(
            "mpi", "the MPI backend: chorus's schedules over MPI point-to-point (one process per rank)");
        return run(config, mpi, backend);
      }
      bench_backends::MpiBackend<chorus::mpi::NativeComm> native(
          "mpi-native", "MPI's own collectives through chorus::mpi::NativeComm (one process per rank)");
      return run(config, native, backend);
    } catch (const std::exception& e) {
      // Report here: leaving the session by an exception aborts the job before main could print.
      std::fflush(stdout);
      std::fprintf(stderr, "chorus-bench: error: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
#else
  (void)ranks_given;
#endif
  throw usage_error("backend " + backend + " is not available (available: " + kBackendChoices + ")");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chorus-bench: nccl-tests compatible collective benchmark on chorus backends.\n"
               "Sizes take K, M, G suffixes (binary: 1K = 1024). Exit status: 0 all values right, "
               "1 some #wrong > 0, 2 error."};
  std::string type_text = "float", op_text = "sum";
  std::string root_text = "0", algo_text = "automatic", backend = "host", collective_text = "all_reduce";
  Config config;
  config.ranks = default_ranks();
  bench::SweepFlags sweep_flags;
  bench::add_sweep_flags(app, sweep_flags, "correctness checks per size (0: none, #wrong shows N/A)");
  app.add_option("-d,--datatype", type_text, std::string("element type: ") + bench::kDataTypeChoices)
      ->capture_default_str();
  app.add_option("-o,--op", op_text, std::string("reduction: ") + bench::kReduceOpChoices)->capture_default_str();
  app.add_option("-r,--root", root_text, "root rank of broadcast and reduce, or all")->capture_default_str();
  CLI::Option* ranks_option = app.add_option("--ranks", config.ranks, "number of ranks of the host backend (default: cores, between 2 and 8; MPI backends: mpirun's -np)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--algo", algo_text, std::string("algorithm (each serves some collectives): ") + bench::kAlgorithmChoices)
      ->capture_default_str();
  app.add_option("--collective", collective_text, std::string("collective: ") + bench::kCollectiveChoices)
      ->capture_default_str();
  app.add_option("--backend", backend, std::string("backend: ") + kBackendChoices)->capture_default_str();
  app.add_option("--repeats", config.repeats,
                 "samples per row (each warmed up and timed); the median is reported, its spread (max/min) in two more "
                 "columns and every sample in -J")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("-J,--json", config.json_path, "also write the results as JSON to this file");
  app.add_option("--csv", config.csv_path, "also write the results as CSV to this file");
  app.add_option("--svg", config.svg_path, "also draw busbw against size as SVG into this file");
  std::string bind_text = "core";
  app.add_option("--bind", bind_text,
                 "core: rank r of the host and shm backends on CPU r mod n of the n CPUs it may use, as mpirun --bind-to "
                 "core places MPI processes; none: where the scheduler puts them (MPI backends: mpirun's binding)")
      ->capture_default_str()
      ->check(CLI::IsMember({"core", "none"}));
  std::string automatic_text = "thresholds";
  app.add_option("--automatic", automatic_text,
                 "who resolves --algo automatic on the host backend: thresholds (measured, the default) or model "
                 "(the calibrated cost model, docs/cost-model.md)")
      ->check(CLI::IsMember({"thresholds", "model"}));
  app.add_flag("--predict", config.predict,
               "add the cost model's predicted time and busbw (host backend; calibrates once per machine, "
               "docs/cost-model.md)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 and print as CLI11 does; usage errors get the tool's prefix.
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-bench: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }

  try {
    const bool mpi_backend = backend == "mpi" || backend == "mpi-native";
    const bool process_backend = mpi_backend || backend == "shm";
    if (backend != "host" && !process_backend) {
      throw usage_error("backend " + backend + " is not available (available: " + kBackendChoices + ")");
    }
    config.collective = bench::parse_collective(collective_text);
    config.algorithm = bench::parse_algorithm(algo_text);
    if (!chorus::supports(config.collective, config.algorithm)) {
      throw usage_error(std::string("--algo ") + chorus::to_string(config.algorithm) + " does not implement " +
                        chorus::to_string(config.collective) + " (choose from " +
                        chorus::algorithm_choices(config.collective) + ")");
    }
    config.sweep = sweep_flags.parse();
    config.timing = sweep_flags.rule();
    config.check_iters = sweep_flags.check_iters;
    config.types = bench::parse_data_types(type_text);
    config.ops = bench::parse_reduce_ops(op_text);
    config.roots = parse_roots(root_text, process_backend ? launched_ranks() : config.ranks);
    config.automatic_model = automatic_text == "model";
    config.bind = bind_text == "core";
    if (config.automatic_model && backend != "host") {
      throw usage_error("--automatic model needs --backend host (only the host backend is calibrated)");
    }
    if (config.predict && backend != "host") {
      throw usage_error("--predict needs --backend host (only the host backend is calibrated)");
    }
    bench_outputs::probe_writable(config.json_path, "JSON");
    bench_outputs::probe_writable(config.csv_path, "CSV");
    bench_outputs::probe_writable(config.svg_path, "SVG");
    return run_on(backend, config, ranks_option->count() > 0);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "chorus-bench: error: %s\n", e.what());
    return 2;
  }
}
