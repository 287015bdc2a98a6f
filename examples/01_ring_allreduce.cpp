// Example 01: the ring all-reduce, watched step by step.
//
// Four ranks each hold eight numbers; afterwards every rank must hold the element-wise sum. The
// ring cuts the buffer into four chunks and runs two phases of n-1 = 3 rounds each:
//   reduce-scatter: each round every rank passes one chunk's partial sum to its right-hand
//                   neighbour, which adds its own contribution; after 3 rounds each rank owns
//                   one finished chunk;
//   all-gather:     each round every rank forwards a finished chunk; after 3 more rounds every
//                   rank has all four.
// Rank r starts with (i+1) * 10^r at element i, so each decimal digit of a result shows which
// ranks have contributed: 1011 at element 0 means ranks 0, 1 and 3 have, rank 2 not yet.
//
// chorus describes the algorithm as data (a Schedule: per rank, an ordered list of steps). This
// program prints that schedule, replays it on one thread round by round so you can watch the
// buffers change, then runs the real multi-threaded host backend and checks it agrees.
//
// `01_ring_allreduce --trace ring.json` also writes what the four threads really did as a Chrome
// trace (open it in https://ui.perfetto.dev or chrome://tracing): a track per rank, the all_reduce
// as one slice with its 12 steps (a send and a receive per round) nested inside, and an arrow from each send to the receive it fed.
// Setting CHORUS_TRACE=ring.json does the same for any program (docs/debugging.md).
//
// `--algo tree` (or halving_doubling, one_shot, two_shot) runs another all-reduce schedule the same
// way, to compare: `01_ring_allreduce --algo tree --trace tree.json`.
#include <chorus/algo/build.hpp>
#include <chorus/algo/printer.hpp>
#include <chorus/host.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace algo = chorus::algo;

namespace {

constexpr int kRanks = 4;
constexpr std::size_t kCount = 8;

std::int32_t initial_value(int rank, std::size_t i) {
  std::int32_t scale = 1;
  for (int r = 0; r < rank; ++r) scale *= 10;
  return static_cast<std::int32_t>(i + 1) * scale;
}

// One rank's memory during the replay, plus what the executor must remember: which of its sends
// a peer has not read yet (a receiver reads straight out of the sender's buffer, so the sender
// may not overwrite that range until then).
struct Rank {
  std::vector<std::int32_t> buffer[3];  // indexed by algo::Buffer: input, output, scratch
  std::vector<bool> written;            // output elements written so far, for printing
  std::size_t next = 0;                 // index of the next step to run
  std::vector<bool> unread;             // per step index: a send its peer has not read yet

  std::int32_t* at(algo::Span span) { return buffer[static_cast<int>(span.buffer)].data() + span.offset; }
};

bool overlaps(const algo::Span& a, std::size_t a_count, const algo::Span& b, std::size_t b_count) {
  return a.buffer == b.buffer && a.offset < b.offset + b_count && b.offset < a.offset + a_count;
}

// A step may run when its data is there (a recv's matching send has run) and, if it writes, it
// does not overwrite a range this rank sent that its peer has not read yet.
bool can_run(const algo::Schedule& schedule, const std::vector<Rank>& ranks, int r) {
  const Rank& self = ranks[r];
  const algo::Step& step = schedule.steps[r][self.next];
  if (algo::is_recv(step.op) && ranks[step.peer].next <= step.match) return false;
  if (!algo::writes(step.op)) return true;
  for (std::size_t i = 0; i < self.next; ++i) {
    const algo::Step& sent = schedule.steps[r][i];
    if (self.unread[i] && overlaps(sent.src, sent.count, step.dst, step.count)) return false;
  }
  return true;
}

// The all-reduce patterns, by the names Pattern prints.
bool parse_pattern(const char* text, algo::Pattern& pattern) {
  for (algo::Pattern p : {algo::Pattern::ring, algo::Pattern::tree, algo::Pattern::halving_doubling, algo::Pattern::one_shot,
                          algo::Pattern::two_shot}) {
    if (std::strcmp(text, algo::to_string(p)) == 0) {
      pattern = p;
      return true;
    }
  }
  return false;
}

void run_step(const algo::Schedule& schedule, std::vector<Rank>& ranks, int r) {
  Rank& self = ranks[r];
  const algo::Step& step = schedule.steps[r][self.next];
  std::printf("  rank %d: %s\n", r, algo::describe(step).c_str());
  const std::int32_t* src = self.at(step.src);
  if (algo::is_recv(step.op)) {  // read the sender's published range and mark it read
    Rank& peer = ranks[step.peer];
    src = peer.at(schedule.steps[step.peer][step.match].src);
    peer.unread[step.match] = false;
  }
  std::int32_t* dst = self.at(step.dst);
  const std::int32_t* local = self.at(step.src);  // recv_reduce's own operand
  for (std::size_t i = 0; i < step.count; ++i) {
    switch (step.op) {
      case algo::Op::send: break;
      case algo::Op::recv_copy:
      case algo::Op::copy: dst[i] = src[i]; break;
      case algo::Op::recv_reduce: dst[i] = local[i] + src[i]; break;
      case algo::Op::reduce: dst[i] = dst[i] + src[i]; break;
    }
  }
  if (step.op == algo::Op::send) self.unread[self.next] = true;
  if (algo::writes(step.op) && step.dst.buffer == algo::Buffer::output) {
    for (std::size_t i = 0; i < step.count; ++i) self.written[step.dst.offset + i] = true;
  }
  ++self.next;
}

void print_outputs(const std::vector<Rank>& ranks) {
  for (int r = 0; r < kRanks; ++r) {
    std::printf("    rank %d out:", r);
    for (std::size_t i = 0; i < kCount; ++i) {
      if (ranks[r].written[i]) std::printf(" %5d", ranks[r].buffer[1][i]);
      else std::printf("     .");
    }
    std::printf("\n");
  }
}

// Round by round: first every rank runs what it can without receiving (its sends), then every
// rank completes one receive. Any order that respects can_run is a valid execution; this one
// shows the ring's lock-step rhythm.
std::vector<std::vector<std::int32_t>> replay(const algo::Schedule& schedule, bool ring) {
  std::vector<Rank> ranks(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ranks[r].buffer[0].resize(kCount);
    for (std::size_t i = 0; i < kCount; ++i) ranks[r].buffer[0][i] = initial_value(r, i);
    ranks[r].buffer[1].assign(kCount, 0);
    ranks[r].buffer[2].assign(schedule.scratch_count, 0);
    ranks[r].written.assign(kCount, false);
    ranks[r].unread.assign(schedule.steps[r].size(), false);
  }
  const auto done = [&](int r) { return ranks[r].next == schedule.steps[r].size(); };
  for (int round = 1;; ++round) {
    bool progress = false, all_done = true;
    if (ring) std::printf("round %d (%s)\n", round, round < kRanks ? "reduce-scatter" : "all-gather");
    else std::printf("round %d\n", round);
    for (int r = 0; r < kRanks; ++r) {
      while (!done(r) && !algo::is_recv(schedule.steps[r][ranks[r].next].op) && can_run(schedule, ranks, r)) {
        run_step(schedule, ranks, r);
        progress = true;
      }
    }
    for (int r = 0; r < kRanks; ++r) {
      if (!done(r) && algo::is_recv(schedule.steps[r][ranks[r].next].op) && can_run(schedule, ranks, r)) {
        run_step(schedule, ranks, r);
        progress = true;
      }
      all_done = all_done && done(r);
    }
    print_outputs(ranks);
    if (all_done) break;
    if (!progress) throw chorus::Error(chorus::ErrorCode::internal, "replay is stuck: the schedule deadlocks");
  }
  std::vector<std::vector<std::int32_t>> outputs;
  for (const Rank& rank : ranks) outputs.push_back(rank.buffer[1]);
  return outputs;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace_path;
  algo::Pattern pattern = algo::Pattern::ring;
  for (int i = 1; i < argc; i += 2) {
    const bool has_value = i + 1 < argc;
    if (has_value && std::strcmp(argv[i], "--trace") == 0) {
      trace_path = argv[i + 1];
      continue;
    }
    if (has_value && std::strcmp(argv[i], "--algo") == 0 && parse_pattern(argv[i + 1], pattern)) continue;
    std::fprintf(stderr, "usage: %s [--algo ring|tree|halving_doubling|one_shot|two_shot] [--trace file.json]\n", argv[0]);
    return 2;
  }
  const bool ring = pattern == algo::Pattern::ring;
  const algo::Schedule schedule = algo::build(algo::Collective::all_reduce, pattern, kRanks, kCount, 0);
  std::printf("The schedule (in = this rank's input, out = its output; ranges are [first, last) elements):\n%s\n",
              algo::to_table(schedule).c_str());

  std::printf("Replay, one round at a time (. = not written yet):\n  inputs:\n");
  for (int r = 0; r < kRanks; ++r) {
    std::printf("    rank %d in: ", r);
    for (std::size_t i = 0; i < kCount; ++i) std::printf(" %5d", initial_value(r, i));
    std::printf("\n");
  }
  const auto replayed = replay(schedule, ring);

  // The real thing: four threads, the same schedule, executed concurrently.
  std::vector<std::vector<std::int32_t>> outputs(kRanks, std::vector<std::int32_t>(kCount));
  chorus::host::Team team(kRanks);
  team.set_trace_path(trace_path);
  team.run([&](chorus::host::Comm& comm) {
    std::vector<std::int32_t> input(kCount);
    for (std::size_t i = 0; i < kCount; ++i) input[i] = initial_value(comm.rank(), i);
    comm.all_reduce(input.data(), outputs[comm.rank()].data(), kCount, chorus::ReduceOp::sum, algo::algorithm_of(pattern));
  });

  int mismatches = 0;
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kCount; ++i) {
      const std::int32_t want = static_cast<std::int32_t>(i + 1) * 1111;
      mismatches += replayed[r][i] != want;
      mismatches += outputs[r][i] != want;
    }
  }
  std::printf("\nhost::Team all_reduce (%s, 4 threads) %s the replay: every element is (i+1) * 1111.\n",
              algo::to_string(pattern), mismatches == 0 ? "agrees with" : "DISAGREES with");
  if (!trace_path.empty()) std::printf("The step trace is in %s.\n", trace_path.c_str());
  return mismatches == 0 ? 0 : 1;
}
