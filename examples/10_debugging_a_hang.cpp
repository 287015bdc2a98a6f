// Example 10: debugging a hang with the flight recorder and the step trace.
//
// The bug every distributed program meets once: one rank skips a collective (here, rank 2 skips the
// broadcast of a learning rate because of a rank-dependent `if`). The ranks now disagree about what
// call 2 is. chorus fails every rank with chorus::Error instead of hanging, and the error carries a
// desync summary built from each rank's flight recorder (its last CHORUS_TRACE_BUFFER calls): the
// first call where the ranks disagree, the odd rank out, who is behind, and what each rank last
// completed and is doing now. comm.dump_trace(path) writes every rank's record as JSON.
//
// Run `10_debugging_a_hang [--trace hang.json]`: with --trace it also writes the step trace of the
// whole run (Chrome trace events: open it in https://ui.perfetto.dev). docs/debugging.md walks
// through this output. Exits 0 when the summary names rank 2 and call 2, as it must.
#include <chorus/host.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::string trace_path;
  if (argc == 3 && std::strcmp(argv[1], "--trace") == 0) {
    trace_path = argv[2];
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--trace file.json]\n", argv[0]);
    return 2;
  }

  constexpr int kRanks = 4;
  chorus::host::Team team(kRanks);
  team.set_trace_path(trace_path);
  std::vector<std::string> errors(kRanks);
  team.run([&](chorus::host::Comm& comm) {
    std::vector<float> gradient(1 << 12, 1.0f);
    float learning_rate = comm.rank() == 0 ? 0.1f : 0.0f;
    try {
      comm.all_reduce(gradient.data(), gradient.data(), gradient.size(), chorus::ReduceOp::sum);   // call 1
      if (comm.rank() != 2) comm.broadcast(&learning_rate, &learning_rate, 1, 0);                   // call 2: the bug
      comm.all_reduce(gradient.data(), gradient.data(), gradient.size(), chorus::ReduceOp::sum);   // call 3
    } catch (const chorus::Error& e) {
      errors[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });

  // Every rank failed; the rank that found the mismatch explains it, the others were released by it.
  for (int r = 0; r < kRanks; ++r) std::printf("rank %d caught: %s\n\n", r, errors[static_cast<std::size_t>(r)].c_str());
  bool explained = false;
  for (const std::string& e : errors) {
    explained = explained || (e.find("first disagreement at call 2") != std::string::npos &&
                              e.find("rank 2 is the odd one out at call 2") != std::string::npos);
  }
  if (!trace_path.empty()) std::printf("The step trace is in %s.\n", trace_path.c_str());
  return explained ? 0 : 1;
}
