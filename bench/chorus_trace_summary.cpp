// chorus-trace-summary: the desync summary of a failed run from its flight-record dumps, like
// PyTorch's flight-recorder analyzer. An MPI rank holds only its own record, so with
// CHORUS_TRACE_DUMP=dir every rank that fails or is released writes its own file; this merges them:
//   mpirun -np 4 -x CHORUS_TRACE_DUMP=dumps ./train ; chorus-trace-summary dumps/*.json
// It also reads host dumps (every rank in one file). The summary is runtime/desync_summary.hpp's, the
// same text a host rank's error carries. Exit status: 0 done, 2 bad input ("chorus-trace-summary:
// error: ..." on stderr): a missing or malformed file, or files of different runs.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "flight_record_reader.hpp"

int main(int argc, char** argv) {
  CLI::App app{"chorus-trace-summary: merges the flight-record dumps of one failed run (CHORUS_TRACE_DUMP, "
               "comm.dump_trace) and prints the desync summary across their ranks. Exit status: 0 done, 2 error."};
  std::vector<std::string> paths;
  app.add_option("dumps", paths, "dump files (JSON) of one communicator of one run, e.g. dir/*.json")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) std::fprintf(stderr, "chorus-trace-summary: error: ");
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  try {
    std::vector<flight_record_reader::DumpFile> dumps;
    for (const std::string& path : paths) dumps.push_back(flight_record_reader::read_dump(path));
    const std::string text = flight_record_reader::report(flight_record_reader::merge(dumps), dumps.size());
    std::fputs(text.c_str(), stdout);
    return 0;
  } catch (const flight_record_reader::BadDump& e) {
    std::fprintf(stderr, "chorus-trace-summary: error: %s\n", e.what());
    return 2;
  }
}
