// chorus-mpi-peer: the MPI library's own blocking collectives (MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Alltoall), timed exactly as chorus-bench
// times chorus, so the two can be set side by side (bench/chorus-compare, docs/compare.md).
//
// Same flags, sizes, element patterns, correctness check (include/chorus/bench/check.hpp), timing
// (bench/sample_timing.hpp: warm-up, calls counted by --min-time unless -n is given, barrier,
// back-to-back calls; the slowest rank's mean), busbw factors,
// table and -J document as chorus-bench. Unlike chorus-bench's `--backend mpi-native` (MPI_Iallreduce
// behind chorus's argument and agreement checks), nothing stands between the timer and MPI: this
// is MPI's fastest path, the one an MPI program would use.
//
// In place follows MPI's MPI_IN_PLACE conventions; they match chorus's layouts (core/collective.hpp)
// except for reduce_scatter, where MPI leaves the result at the start of the buffer, and there it is
// checked. avg is not offered: MPI has no average.
// Exit status: 0 every value right, 1 some #wrong > 0, 2 usage or runtime error.
#include <chorus/core/config.hpp>
#include <chorus/mpi/mpi_header.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <chorus/bench.hpp>
#include <chorus/bootstrap/launch_env.hpp>
#include <chorus/mpi/data_types.hpp>

#include "bench_json.hpp"
#include "sample_timing.hpp"
#include "sweep_cli.hpp"

namespace {

using chorus::Collective;
using chorus::DataType;
using chorus::ReduceOp;
namespace bench = chorus::bench;

struct Config {
  Collective collective = Collective::all_reduce;
  bench::SweepSpec sweep;
  sample_timing::Rule timing;
  int check_iters = 1;
  std::vector<DataType> types;
  std::vector<ReduceOp> ops;
  int root = 0;
  std::string json_path;
  int corrupt_rank = -1;  // test hook: this rank damages its output before each check
};

chorus::Error usage_error(const std::string& message) {
  return chorus::Error(chorus::ErrorCode::invalid_argument, message);
}

// What bench::seconds_per_call needs from a communicator.
struct World {
  void barrier() const { MPI_Barrier(MPI_COMM_WORLD); }
};

void check_mpi(int code, const char* function) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw chorus::Error(chorus::ErrorCode::internal, std::string("chorus-mpi-peer: ") + function + " failed: " + text);
}

// One call of the collective with MPI's own function; send == nullptr means MPI_IN_PLACE.
void call_mpi(const Config& config, const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int rank,
              std::size_t root_copy_bytes) {
  const void* in = send != nullptr ? send : MPI_IN_PLACE;
  const MPI_Comm world = MPI_COMM_WORLD;
  switch (config.collective) {
    case Collective::all_reduce: check_mpi(MPI_Allreduce(in, recv, count, type, op, world), "MPI_Allreduce"); return;
    case Collective::all_gather:
      check_mpi(MPI_Allgather(in, count, type, recv, count, type, world), "MPI_Allgather");
      return;
    case Collective::reduce_scatter:
      check_mpi(MPI_Reduce_scatter_block(in, recv, count, type, op, world), "MPI_Reduce_scatter_block");
      return;
    case Collective::broadcast:
      // NCCL's out-of-place broadcast reads the root's send buffer: MPI's needs it in recv first.
      if (rank == config.root && send != nullptr && root_copy_bytes > 0) std::memcpy(recv, send, root_copy_bytes);
      check_mpi(MPI_Bcast(recv, count, type, config.root, world), "MPI_Bcast");
      return;
    case Collective::reduce:
      // Only the root may pass MPI_IN_PLACE; the others send from the shared buffer.
      check_mpi(MPI_Reduce(send != nullptr || rank == config.root ? in : recv, recv, count, type, op, config.root,
                           world),
                "MPI_Reduce");
      return;
    case Collective::all_to_all:
      check_mpi(MPI_Alltoall(in, count, type, recv, count, type, world), "MPI_Alltoall");
      return;
  }
}

template <class T>
void poison(T* data, std::size_t count) {
  if (count > 0) std::memset(static_cast<void*>(data), 0xA5, count * sizeof(T));
}

struct Measured {
  double seconds = 0.0;     // this rank's mean per call (by time: the median loop's slowest rank's)
  int warmup = 0, iters = 0, loops = 1;  // the calls the sample made (the same on every rank)
  std::vector<double> loop_seconds;      // by time: each loop's slowest rank's mean per call
  std::uint64_t wrong = 0;  // this rank's mismatching elements
};

// Where one placement's pointers lie: the call reads `send` (nullptr: MPI_IN_PLACE) and writes
// `recv`; the input pattern goes to `input`, the result is checked at `output`, and `memory` is
// everything a correct call may overwrite, poisoned before each check.
template <class T>
struct Placement {
  T* send;
  T* recv;
  T* input;
  T* output;
  T* memory;
  std::size_t memory_count;
};

template <class T>
Measured measure(const Config& config, const bench::Check<T>& check, int rank, Placement<T> at, std::size_t count) {
  const MPI_Datatype type = chorus::mpi::detail::to_mpi(chorus::data_type_v<T>);
  const MPI_Op op = chorus::mpi::detail::to_mpi(config.ops.front(), chorus::data_type_v<T>);
  const int n = static_cast<int>(count);
  const auto call = [&] { call_mpi(config, at.send, at.recv, n, type, op, rank, count * sizeof(T)); };
  Measured out;
  check.fill_input(rank, at.input);
  World world;
  const auto agree_max = [](double x) {
    double slowest = 0.0;
    MPI_Allreduce(&x, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  };
  const sample_timing::Sample sample = sample_timing::time_calls(world, config.timing, call, agree_max);
  out.seconds = sample.seconds;
  out.warmup = sample.warmup;
  out.iters = sample.iters;
  out.loops = sample.loops;
  out.loop_seconds = sample.loop_seconds;
  for (int i = 0; i < config.check_iters; ++i) {
    poison(at.memory, at.memory_count);
    check.fill_input(rank, at.input);
    call();
    if (rank == config.corrupt_rank && check.checks(rank) && check.output_count() > 0) {
      reinterpret_cast<unsigned char*>(at.output)[0] ^= 1;
    }
    out.wrong += check.count_wrong(rank, at.output);
  }
  return out;
}

// The slowest rank's time and every rank's wrong values, as chorus-bench combines them.
bench::Result combine(const Config& config, int ranks, std::size_t bytes, Measured mine) {
  double slowest = 0.0;
  std::uint64_t wrong = 0;
  MPI_Allreduce(&mine.seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&mine.wrong, &wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  std::optional<std::size_t> counted;
  if (config.check_iters > 0) counted = static_cast<std::size_t>(wrong);
  return bench::make_result(config.collective, ranks, bytes, slowest, counted);
}

template <class T>
bench::Row run_row(const Config& config, int rank, int ranks, std::size_t sweep_bytes, sample_timing::Counts& counts) {
  const bench::Shape shape = bench::shape_of(config.collective, sweep_bytes, sizeof(T), ranks);
  if (std::max(shape.input_count, shape.output_count) > static_cast<std::size_t>(INT_MAX)) {
    throw usage_error("size " + std::to_string(sweep_bytes) + " needs more than INT_MAX elements in one MPI call");
  }
  const bench::Check<T> check(config.collective, config.ops.front(), ranks, config.root, shape.count);
  bench::Row row;
  row.bytes = shape.bytes;
  row.elements = shape.elements;
  row.type = bench::nccl_name(chorus::data_type_v<T>);
  row.redop = chorus::traits(config.collective).reduces ? chorus::to_string(config.ops.front()) : "none";
  row.root = chorus::traits(config.collective).rooted ? config.root : -1;
  {
    std::vector<T> send(shape.input_count), recv(shape.output_count);
    const Placement<T> apart{send.data(), recv.data(), send.data(), recv.data(), recv.data(), recv.size()};
    const Measured m = measure(config, check, rank, apart, shape.count);
    counts.warmup[0] = m.warmup;
    counts.iters[0] = m.iters;
    counts.loops[0] = m.loops;
    counts.loop_seconds[0] = m.loop_seconds;
    row.out_of_place = combine(config, ranks, shape.bytes, m);
  }  // freed first: peak memory stays at two buffers per rank, as in chorus-bench
  const chorus::InPlaceBuffer layout = chorus::in_place_buffer(config.collective, rank, ranks, shape.count);
  std::vector<T> buffer(layout.buffer_count);
  // MPI's in-place reduce_scatter leaves the result at the start of the buffer, not at the rank's block.
  T* const output = config.collective == Collective::reduce_scatter ? buffer.data() : buffer.data() + layout.recv_offset;
  const Placement<T> shared{nullptr, buffer.data(), buffer.data() + layout.send_offset, output, buffer.data(),
                            buffer.size()};
  const Measured m = measure(config, check, rank, shared, shape.count);
  counts.warmup[1] = m.warmup;
  counts.iters[1] = m.iters;
  counts.loops[1] = m.loops;
  counts.loop_seconds[1] = m.loop_seconds;
  row.in_place = combine(config, ranks, shape.bytes, m);
  return row;
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string line(text, static_cast<std::size_t>(length));
  const std::size_t end = line.find_first_of(",\n");
  return end == std::string::npos ? line : line.substr(0, end);
}

int run(const Config& config) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::vector<std::size_t> sizes = bench::size_sweep(config.sweep);
  const std::string library = library_version();
  const char* function = config.collective == Collective::all_reduce       ? "MPI_Allreduce"
                         : config.collective == Collective::all_gather     ? "MPI_Allgather"
                         : config.collective == Collective::reduce_scatter ? "MPI_Reduce_scatter_block"
                         : config.collective == Collective::broadcast      ? "MPI_Bcast"
                         : config.collective == Collective::reduce         ? "MPI_Reduce"
                                                                           : "MPI_Alltoall";
  if (rank == 0) {
    std::printf("# chorus-mpi-peer %s: %s through %s (%s)\n", CHORUS_VERSION_STRING, chorus::to_string(config.collective),
                function, library.c_str());
    const std::string header = bench::table_header();
    std::printf("# ranks %d minBytes %zu maxBytes %zu %s validation: %d sizes: %zu\n#\n%s", ranks,
                config.sweep.min_bytes, config.sweep.max_bytes, sample_timing::describe(config.timing).c_str(),
                config.check_iters, sizes.size(),
                config.timing.by_time() ? sample_timing::header_with_calls(header).c_str() : header.c_str());
    std::fflush(stdout);
  }
  std::vector<bench::Row> rows;
  std::vector<sample_timing::Counts> counts;
  for (DataType type : config.types) {
    for (std::size_t bytes : sizes) {
      counts.emplace_back();
      chorus::visit_type(type, [&](auto tag) {
        rows.push_back(run_row<decltype(tag)>(config, rank, ranks, bytes, counts.back()));
      });
      if (rank == 0) {
        const std::string line = bench::format_row(rows.back());
        std::fputs((config.timing.by_time() ? sample_timing::row_with_calls(line, counts.back()) : line).c_str(), stdout);
        std::fflush(stdout);
      }
    }
  }
  if (rank == 0) {
    std::fputs(bench::table_footer(rows).c_str(), stdout);
    if (!config.json_path.empty()) {
      const bench_json::RunInfo info{"chorus-mpi-peer", CHORUS_VERSION_STRING, "mpi-peer",
                                     chorus::to_string(config.collective), "mpi", ranks, config.timing,
                                     config.check_iters};
      nlohmann::json doc = bench_json::document(info, rows, {}, counts);
      doc["function"] = function;  // "algorithm" is "mpi": the library picks, as its tuning says
      doc["library"] = library;
      bench_json::write(config.json_path, doc);
    }
  }
  return bench::total_wrong(rows) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Every rank parses the same arguments and fails alike, before MPI starts; only the launcher's rank 0
  // says why.
  const chorus::bootstrap::LaunchInfo launch = chorus::bootstrap::launch_info();
  const bool speaks = launch.rank == 0;
  CLI::App app{"chorus-mpi-peer: MPI's own blocking collectives, timed as chorus-bench times chorus (run under mpirun).\n"
               "Exit status: 0 all values right, 1 some #wrong > 0, 2 error."};
  std::string type_text = "float", op_text = "sum";
  std::string collective_text = "all_reduce";
  Config config;
  bench::SweepFlags sweep_flags;
  bench::add_sweep_flags(app, sweep_flags, "correctness checks per size (0: none)");
  app.add_option("-d,--datatype", type_text, std::string("element type: ") + bench::kDataTypeChoices)
      ->capture_default_str();
  app.add_option("-o,--op", op_text, "reduction: sum, prod, max, min (MPI has no avg)")->capture_default_str();
  app.add_option("-r,--root", config.root, "root rank of broadcast and reduce")->capture_default_str()->check(
      CLI::NonNegativeNumber);
  app.add_option("--collective", collective_text, std::string("collective: ") + bench::kCollectiveChoices)
      ->capture_default_str();
  app.add_option("-J,--json", config.json_path, "also write the results as JSON (chorus-bench's keys) to this file");
  // Not in --help: the test suite's proof that a wrong result is caught (bench/meson.build).
  app.add_option("--corrupt-rank", config.corrupt_rank, "")->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    if (speaks) {
      std::fprintf(stderr, "chorus-mpi-peer: error: ");
      app.exit(e);
    }
    return 2;
  }
  try {
    config.collective = bench::parse_collective(collective_text);
    config.sweep = sweep_flags.parse();
    config.timing = sweep_flags.rule();
    config.check_iters = sweep_flags.check_iters;
    bench::size_sweep(config.sweep);  // refuse a bad sweep before MPI starts
    config.types = bench::parse_data_types(type_text);
    config.ops = bench::parse_reduce_ops(op_text);
    if (config.root >= launch.size) {
      throw usage_error("root " + std::to_string(config.root) + " is out of range for " + std::to_string(launch.size) +
                        " ranks");
    }
    if (config.ops.size() != 1 || config.ops.front() == ReduceOp::avg) {
      throw usage_error("-o " + op_text + ": choose one of sum, prod, max, min (MPI has no avg)");
    }
  } catch (const std::exception& e) {
    if (speaks) std::fprintf(stderr, "chorus-mpi-peer: error: %s\n", e.what());
    return 2;
  }
  MPI_Init(&argc, &argv);
  int status = 2;
  try {
    status = run(config);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "chorus-mpi-peer: error: %s\n", e.what());
    // A rank that fails alone would leave the others blocked in a collective.
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return status;
}
