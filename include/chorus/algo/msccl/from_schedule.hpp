// from_schedule: a chorus schedule as an MSCCL program (msccl::Program), which write.hpp prints as the
// XML msccl-executor-nccl runs. The mapping:
//   - units: the chunk is the largest element count dividing every buffer size, offset and count the
//     schedule uses (or the one Options::nchunksperloop asks for), so every step moves whole chunks;
//   - thread blocks: one per peer on every rank (send = recv = that peer, channel 0), holding that
//     peer's sends and receives in schedule order, so each (sender, receiver, channel) connection has
//     one thread block at each end; local copies and reductions join the thread block of the last step
//     they must follow, or a local thread block when they follow none;
//   - steps: send -> s, recv -> r, recv+reduce -> rrc (with src == dst; a cpy first when the local operand
//     lies elsewhere, so msccl-tools' and the executor's readings of rrc's src agree), copy -> cpy,
//     reduce -> re; zero-count steps and in-place copies are left out;
//   - order: a step waits (depid/deps, hasdep on the awaited step) for the last step of each other thread
//     block of its rank that touches a chunk it touches where one of the two writes (aliasing in place as
//     the collective says); waits already implied by earlier waits are left out, and a step with more
//     than one becomes nops carrying the extra ones, as the executor wants.
// These orders are a subset of the schedule's own step order, so the program runs wherever the schedule
// runs; verify_msccl proves it and reports the buffering it needs. See docs/msccl.md.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"
#include "program.hpp"
#include "verify_layout.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::msccl {

struct ExportOptions {
  std::string name;  // empty: chorus_<algorithm>_<collective>_<ranks>[_inplace]
  Protocol protocol = Protocol::simple;
  int nchunksperloop = 0;  // 0: the fewest chunks that express every step exactly
};

// msccl-executor-nccl's limits (its msccl.h: MSCCL_MAX_NUM_STEPS,
// MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL).
constexpr int kMaxStepsPerThreadBlock = 256;
constexpr int kMaxThreadBlocksPerChannel = 32;

namespace export_detail {

using chorus::detail::concat;

inline const char* coll_spelling(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "allreduce";
    case Collective::all_gather: return "allgather";
    case Collective::reduce_scatter: return "reducescatter";  // the executor's spelling
    case Collective::all_to_all: return "alltoall";
    default: return nullptr;
  }
}

// A slot range [begin, end) of one rank's memory (verify_layout's slots: aliased chunks share one).
struct Range {
  int begin = 0, end = 0;
  bool overlaps(const Range& other) const { return begin < other.end && other.begin < end; }
};

// One MSCCL step being built, with the slots it reads and writes for the order analysis.
struct Atom {
  Step step;
  int tb = 0;
  std::vector<Range> reads, writes;
  std::vector<int> clock;  // per thread block of the rank: the last step index known finished after this one
};

class Exporter {
 public:
  Exporter(const Schedule& schedule, const ExportOptions& options) : schedule_(schedule), options_(options) {}

  Program run() {
    header();
    match_messages();
    for (int rank = 0; rank < schedule_.ranks; ++rank) export_rank(rank);
    return std::move(program_);
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw Error(ErrorCode::unsupported,
                concat("chorus::algo::msccl::from_schedule: ", to_string(schedule_.pattern), " ",
                       to_string(schedule_.collective), " on ", schedule_.ranks, " ranks (count ", schedule_.count,
                       schedule_.in_place ? ", in place" : "", "): ", why));
  }

  static bool uses_src(Op op) { return op != Op::recv_copy; }

  // The chunk size in elements and the program's <algo> and <gpu> attributes.
  void header() {
    const char* coll = coll_spelling(schedule_.collective);
    if (!coll) {
      refuse(concat(to_string(schedule_.collective), " is not exported (allreduce, allgather, reducescatter and "
                    "alltoall are: the four collectives chorus imports and verifies)"));
    }
    if (schedule_.ranks < 1 || schedule_.steps.size() != static_cast<std::size_t>(schedule_.ranks)) {
      refuse(concat("the schedule has ", schedule_.steps.size(), " step lists"));
    }
    const std::size_t in = schedule_.input_count(), out = schedule_.output_count();
    const std::size_t largest = std::max(in, out);
    std::size_t chunk = std::gcd(in, out);
    for (const auto& steps : schedule_.steps) {
      for (const algo::Step& step : steps) {
        if (step.count == 0) continue;
        chunk = std::gcd(chunk, step.count);
        if (uses_src(step.op)) chunk = std::gcd(chunk, step.src.offset);
        if (writes(step.op)) chunk = std::gcd(chunk, step.dst.offset);
      }
    }
    if (chunk == 0) refuse("a count of 0 has no chunks to write");
    if (options_.nchunksperloop > 0) {
      const auto asked = static_cast<std::size_t>(options_.nchunksperloop);
      if (largest % asked != 0 || chunk % (largest / asked) != 0) {
        refuse(concat("nchunksperloop ", asked, " does not cut the schedule's steps into whole chunks (the fewest "
                      "that does is ", largest / chunk, "; use a multiple of it that divides ", largest, ")"));
      }
      chunk = largest / asked;
    }
    if (largest / chunk > static_cast<std::size_t>(INT_MAX) || schedule_.scratch_count / chunk > INT_MAX / 2) {
      refuse(concat("its steps need ", largest / chunk, " chunks, more than the format's int offsets hold"));
    }
    chunk_ = chunk;
    program_.name = options_.name.empty()
                        ? concat("chorus_", to_string(schedule_.pattern), "_", to_string(schedule_.collective), "_",
                                 schedule_.ranks, schedule_.in_place ? "_inplace" : "")
                        : options_.name;
    program_.proto = options_.protocol;
    program_.ngpus = schedule_.ranks;
    program_.coll = schedule_.collective;
    program_.coll_name = coll;
    program_.nchunksperloop = static_cast<int>(largest / chunk);
    program_.nchannels = 1;
    program_.inplace = schedule_.in_place;
    program_.outofplace = !schedule_.in_place;
    program_.gpus.resize(static_cast<std::size_t>(schedule_.ranks));
    for (int rank = 0; rank < schedule_.ranks; ++rank) {
      Gpu& gpu = program_.gpus[rank];
      gpu.id = rank;
      gpu.i_chunks = static_cast<int>(in / chunk);
      gpu.o_chunks = static_cast<int>(out / chunk);
      gpu.s_chunks = static_cast<int>((schedule_.scratch_count + chunk - 1) / chunk);
    }
  }

  int chunks(std::size_t elements) const { return static_cast<int>(elements / chunk_); }

  // For every send, the span its receiver writes; for every receive, the span its sender reads
  // (msccl-tools writes the peer's slot on the side a step does not use locally).
  void match_messages() {
    const int n = schedule_.ranks;
    std::map<std::pair<int, int>, std::vector<std::pair<int, std::size_t>>> sends;  // (from, to) -> (rank, index)
    for (int rank = 0; rank < n; ++rank) {
      for (std::size_t i = 0; i < schedule_.steps[rank].size(); ++i) {
        const algo::Step& step = schedule_.steps[rank][i];
        if (step.op == Op::send && step.count > 0) sends[{rank, step.peer}].emplace_back(rank, i);
      }
    }
    std::map<std::pair<int, int>, std::size_t> taken;
    for (int rank = 0; rank < n; ++rank) {
      for (std::size_t i = 0; i < schedule_.steps[rank].size(); ++i) {
        const algo::Step& step = schedule_.steps[rank][i];
        if (!is_recv(step.op) || step.count == 0) continue;
        const auto& queue = sends[{step.peer, rank}];
        const std::size_t k = taken[{step.peer, rank}]++;
        if (k >= queue.size()) refuse(concat("rank ", rank, " step ", i, " receives a message rank ", step.peer, " never sends"));
        const algo::Step& send = schedule_.steps[queue[k].first][queue[k].second];
        peer_span_[{queue[k].first, queue[k].second}] = step.dst;
        peer_span_[{rank, i}] = send.src;
      }
    }
  }

  Range range(const RankLayout& layout, Buffer buffer, std::size_t offset, int cnt) const {
    const int first = layout.slot(buffer, chunks(offset));
    const int last = layout.slot(buffer, chunks(offset) + cnt - 1);
    if (first < 0 || last < 0) {
      refuse(concat("a step touches ", to_string(buffer), "[", offset, ", +", static_cast<std::size_t>(cnt) * chunk_,
                    "), outside the buffer the collective has"));
    }
    return {first, last + 1};
  }

  void export_rank(int rank) {
    const RankLayout layout(program_, rank);
    order_.clear();
    const std::vector<algo::Step>& steps = schedule_.steps[rank];
    // One thread block per peer, in rank order; the local one (if needed) after them.
    std::vector<int> peers;
    for (const algo::Step& step : steps) {
      if (step.op == Op::send || is_recv(step.op)) peers.push_back(step.peer);
    }
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    const int local_tb = static_cast<int>(peers.size());
    std::vector<std::vector<Atom>> tbs(peers.size() + 1);
    auto tb_of = [&](int peer) { return static_cast<int>(std::lower_bound(peers.begin(), peers.end(), peer) - peers.begin()); };

    for (std::size_t i = 0; i < steps.size(); ++i) {
      const algo::Step& step = steps[i];
      if (step.count == 0) continue;
      const int cnt = chunks(step.count);
      auto make = [&](StepType type, const Span* src, const Span* dst) {
        Atom atom;
        atom.step.type = type;
        atom.step.cnt = cnt;
        if (src) {
          atom.step.srcbuf = src->buffer;
          atom.step.srcoff = chunks(src->offset);
        }
        if (dst) {
          atom.step.dstbuf = dst->buffer;
          atom.step.dstoff = chunks(dst->offset);
        }
        if (reads_src(type)) atom.reads.push_back(range(layout, src->buffer, src->offset, cnt));
        if (writes_dst(type)) atom.writes.push_back(range(layout, dst->buffer, dst->offset, cnt));
        if (type == StepType::reduce) atom.reads.push_back(atom.writes.back());
        return atom;
      };
      const auto peer_span = peer_span_.find({rank, i});
      switch (step.op) {
        case Op::send: {
          Atom atom = make(StepType::send, &step.src, nullptr);
          atom.step.dstbuf = peer_span->second.buffer;  // the receiver's slot, as msccl-tools writes it
          atom.step.dstoff = chunks(peer_span->second.offset);
          place(tbs, atom, tb_of(step.peer));
          break;
        }
        case Op::recv_copy: {
          Atom atom = make(StepType::recv, nullptr, &step.dst);
          atom.step.srcbuf = peer_span->second.buffer;  // the sender's slot
          atom.step.srcoff = chunks(peer_span->second.offset);
          place(tbs, atom, tb_of(step.peer));
          break;
        }
        case Op::recv_reduce: {
          const Range src = range(layout, step.src.buffer, step.src.offset, cnt);
          const Range dst = range(layout, step.dst.buffer, step.dst.offset, cnt);
          if (src.begin != dst.begin) {
            if (src.overlaps(dst)) refuse(concat("rank ", rank, " step ", i, " reduces into a range overlapping its operand"));
            place(tbs, make(StepType::copy, &step.src, &step.dst), tb_of(step.peer));
          }
          place(tbs, make(StepType::recv_reduce_copy, &step.dst, &step.dst), tb_of(step.peer));
          break;
        }
        case Op::copy: {
          Atom atom = make(StepType::copy, &step.src, &step.dst);
          if (atom.reads[0].begin == atom.writes[0].begin) break;  // in place: already there
          place(tbs, atom, -1, local_tb);
          break;
        }
        case Op::reduce: place(tbs, make(StepType::reduce, &step.src, &step.dst), -1, local_tb); break;
      }
    }
    if (tbs.back().empty()) tbs.pop_back();
    if (static_cast<int>(tbs.size()) > kMaxThreadBlocksPerChannel) {
      refuse(concat("rank ", rank, " needs ", tbs.size(), " thread blocks, more than the executor's ",
                    kMaxThreadBlocksPerChannel, " on one channel (one per peer)"));
    }
    Gpu& gpu = program_.gpus[rank];
    for (std::size_t t = 0; t < tbs.size(); ++t) {
      if (tbs[t].size() > static_cast<std::size_t>(kMaxStepsPerThreadBlock)) {
        refuse(concat("rank ", rank, " thread block ", t, " has ", tbs[t].size(), " steps, more than the executor's ",
                      kMaxStepsPerThreadBlock, " (fewer slices make fewer steps)"));
      }
      ThreadBlock tb;
      tb.id = static_cast<int>(t);
      if (static_cast<int>(t) < local_tb) {
        bool sends_to = false, receives_from = false;
        for (const Atom& atom : tbs[t]) {
          sends_to = sends_to || sends(atom.step.type);
          receives_from = receives_from || receives(atom.step.type);
        }
        tb.send = sends_to ? peers[t] : -1;
        tb.recv = receives_from ? peers[t] : -1;
      }
      for (std::size_t s = 0; s < tbs[t].size(); ++s) {
        Step step = tbs[t][s].step;
        step.s = static_cast<int>(s);
        tb.steps.push_back(step);
      }
      gpu.thread_blocks.push_back(std::move(tb));
    }
  }

  // Appends `atom` to thread block `tb` (a peer's), or for a local step (tb < 0) to the thread block of the
  // last step it must follow, else `local`; then adds the waits on the other thread blocks it needs.
  void place(std::vector<std::vector<Atom>>& tbs, Atom atom, int tb, int local = -1) {
    const int count = static_cast<int>(tbs.size());
    std::vector<int> need(count, -1);
    int latest_tb = -1, latest_order = -1;
    for (int u = 0; u < count; ++u) {
      for (int k = static_cast<int>(tbs[u].size()) - 1; k >= 0 && need[u] < 0; --k) {
        if (conflicts(tbs[u][k], atom)) {
          need[u] = k;
          if (order_[{u, k}] > latest_order) latest_order = order_[{u, k}], latest_tb = u;
        }
      }
    }
    if (tb < 0) tb = latest_tb >= 0 ? latest_tb : local;
    std::vector<int> clock = tbs[tb].empty() ? std::vector<int>(count, -1) : tbs[tb].back().clock;
    std::vector<std::pair<int, int>> waits;  // (thread block, step) not implied by this thread block's past
    for (int u = 0; u < count; ++u) {
      if (u != tb && need[u] > clock[u]) waits.emplace_back(u, need[u]);
    }
    // A wait implied by another of this step's waits is left out.
    std::vector<std::pair<int, int>> kept;
    for (const auto& [u, k] : waits) {
      bool implied = false;
      for (const auto& [v, m] : waits) implied = implied || (v != u && tbs[v][m].clock[u] >= k);
      if (!implied) kept.push_back({u, k});
    }
    for (std::size_t w = 0; w < kept.size(); ++w) {
      const auto [u, k] = kept[w];
      tbs[u][k].step.hasdep = true;
      for (int v = 0; v < count; ++v) clock[v] = std::max(clock[v], tbs[u][k].clock[v]);
      if (w + 1 < kept.size()) {  // all but the last wait ride on nops just before the step
        Atom nop;
        nop.step.type = StepType::nop;
        nop.step.cnt = 0;
        nop.step.depid = u;
        nop.step.deps = k;
        nop.tb = tb;
        clock[tb] = static_cast<int>(tbs[tb].size());
        nop.clock = clock;
        tbs[tb].push_back(std::move(nop));
      } else {
        atom.step.depid = u;
        atom.step.deps = k;
      }
    }
    atom.tb = tb;
    clock[tb] = static_cast<int>(tbs[tb].size());
    atom.clock = std::move(clock);
    order_[{tb, static_cast<int>(tbs[tb].size())}] = next_order_++;
    tbs[tb].push_back(std::move(atom));
  }

  static bool conflicts(const Atom& earlier, const Atom& later) {
    for (const Range& w : earlier.writes) {
      for (const Range& r : later.reads) if (w.overlaps(r)) return true;
      for (const Range& x : later.writes) if (w.overlaps(x)) return true;
    }
    for (const Range& r : earlier.reads) {
      for (const Range& x : later.writes) if (r.overlaps(x)) return true;
    }
    return false;
  }

  const Schedule& schedule_;
  const ExportOptions& options_;
  Program program_;
  std::size_t chunk_ = 1;
  std::map<std::pair<int, std::size_t>, Span> peer_span_;  // (rank, step index) -> the peer's span
  std::map<std::pair<int, int>, int> order_;                // (thread block, step) -> position in the rank's order
  int next_order_ = 0;
};

}  // namespace export_detail

// The schedule as an MSCCL program, or chorus::Error (unsupported) naming the schedule and why the
// format cannot express it: broadcast and reduce (not among the four collectives chorus imports), a
// count of 0, more chunks than int offsets hold, more thread blocks or steps than the executor allows.
inline Program from_schedule(const Schedule& schedule, const ExportOptions& options = {}) {
  return export_detail::Exporter(schedule, options).run();
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::msccl
