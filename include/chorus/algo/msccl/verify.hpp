// verify_msccl: proves an imported MSCCL program (msccl::Program) computes its collective, or names
// the first problem: a deadlock, a mismatched message, a race between thread blocks, a wrong
// result. It runs the program symbolically: each thread block runs its steps in order; a step runs
// once its dependency's flag is set (depid/deps, flags set by hasdep steps) and, for a receive, once
// a message waits at the head of its (sender, receiver, channel) connection's FIFO; sends enqueue.
// Chunks hold multisets of (source rank, source chunk) contributions (verify_layout.hpp). An enabled
// step stays enabled (one sender and one receiver per connection, flags only grow), so whether the
// program finishes, which message each receive takes and the happens-before order (vector clocks
// over thread blocks, joined along dependencies and messages) do not depend on the order the
// simulation picks. The buffering reported is the least number of messages per connection with
// which the program still finishes when every step runs atomically. See docs/msccl.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"
#include "program.hpp"
#include "verify_layout.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::msccl {

enum class Problem : std::uint8_t { none, unsupported, deadlock, mismatched_message, race, wrong_result };

inline const char* to_string(Problem problem) {
  switch (problem) {
    case Problem::none: return "none";
    case Problem::unsupported: return "unsupported";
    case Problem::deadlock: return "deadlock";
    case Problem::mismatched_message: return "mismatched message";
    case Problem::race: return "race";
    case Problem::wrong_result: return "wrong result";
  }
  return "?";
}

// One (sender, receiver, channel) connection the program uses.
struct ConnectionUse {
  int sender = 0;
  int receiver = 0;
  int chan = 0;
  int messages = 0;   // sent on it in all
  int buffered = 0;   // the most waiting at once when run with `Verification::buffering` per connection
  int unbounded = 0;  // the most waiting at once when sends never wait (every step as soon as it can)
};

struct Verification {
  bool ok = false;
  Problem problem = Problem::none;
  std::string reason;        // empty when ok; names rank, thread block, step and chunk
  int steps = 0;             // all steps of all thread blocks (nops included)
  int buffering = 0;         // messages per connection the program needs to finish (0: no messages)
  bool races_checked = false;  // false when the program is too large for the vector clocks
  std::vector<ConnectionUse> connections;  // sorted by (sender, receiver, chan)
};

namespace verify_msccl_detail {

using chorus::detail::concat;

constexpr long long kMaxSlots = 1LL << 24;      // all ranks' chunk slots together
constexpr long long kMaxSteps = 1LL << 22;
constexpr long long kMaxClockCells = 1LL << 26;  // vector clock entries kept for the race check
constexpr std::size_t kMaxStuckListed = 8;

inline std::string where(const Program& program, int rank, int tb, int s) {
  const Step& step = program.gpus[rank].thread_blocks[tb].steps[s];
  return concat("rank ", rank, " thread block ", tb, " step ", s, " (", to_string(step.type), ", line ", step.line, ")");
}

inline std::string chunk_name(Buffer buffer, long long index) { return concat(buffer_letter(buffer), "[", index, "]"); }

using Clock = std::vector<std::uint32_t>;

struct Message {
  std::vector<Contents> payload;
  int rank = 0, tb = 0, s = 0;  // the sending step
  Clock clock;                  // the sender's clock after the send (race check only)
};

struct Connection {
  int sender = 0, receiver = 0, chan = 0;
  int sender_tb = -1, receiver_tb = -1;
  std::deque<Message> queue;
  int sent = 0;
  int peak = 0;
};

// A shadow of one slot for the race check and the messages: who wrote it last, who read it since.
struct Access {
  int tb = -1;  // global thread-block index
  std::uint32_t epoch = 0;
  int rank = 0, local_tb = 0, s = 0;
  bool write = false;
  Buffer buffer = Buffer::input;
  int index = 0;
};
struct Shadow {
  Access last_write;
  std::vector<Access> reads;  // since the last write, one per thread block
};

class Simulation {
 public:
  Simulation(const Program& program, int capacity, bool check_races)
      : program_(program), capacity_(capacity), check_races_(check_races) {}

  // Runs to the end or the first deadlock or mismatch. Returns the problem (none when every step ran).
  Problem run() {
    setup();
    if (problem_ != Problem::none) return problem_;
    bool progress = true;
    while (progress && problem_ == Problem::none) {
      progress = false;
      for (std::size_t g = 0; g < blocks_.size() && problem_ == Problem::none; ++g) {
        while (problem_ == Problem::none && ready(static_cast<int>(g))) {
          execute(static_cast<int>(g));
          progress = true;
        }
      }
    }
    if (problem_ != Problem::none) return problem_;
    if (done_ < total_steps_) {
      problem_ = Problem::deadlock;
      reason_ = deadlock_reason();
      return problem_;
    }
    return Problem::none;
  }

  const std::string& reason() const { return reason_; }
  const std::string& race() const { return race_; }
  const std::vector<Connection>& connections() const { return connections_; }
  int total_steps() const { return total_steps_; }

  // After a complete run: messages nobody took, then the collective's result.
  Problem check_end(std::string& why) const {
    for (const Connection& connection : connections_) {
      if (connection.queue.empty()) continue;
      const Message& first = connection.queue.front();
      why = concat("mismatched message: ", where(program_, first.rank, first.tb, first.s), " sends ",
                   first.payload.size(), " chunk(s) to rank ", connection.receiver, " on channel ", connection.chan,
                   " that no receive takes (", connection.queue.size(), " message(s) left on that connection: ",
                   connection.sent, " sent, ", connection.sent - static_cast<int>(connection.queue.size()),
                   " received)");
      return Problem::mismatched_message;
    }
    for (int rank = 0; rank < program_.ngpus; ++rank) {
      const RankLayout& layout = layouts_[rank];
      for (int c = 0; c < layout.size(Buffer::output); ++c) {
        const int slot = layout.slot(Buffer::output, c);
        const Contents want = expected_output(program_, rank, c);
        const Contents& have = memory_[rank][slot];
        if (have == want) continue;
        const Access& last = shadows_[rank][slot].last_write;
        const std::string writer =
            last.tb < 0 ? std::string("never written by a step")
                        : concat("last written by ", where(program_, last.rank, last.local_tb, last.s));
        why = concat("wrong result: rank ", rank, " chunk o[", c, "] holds ", describe(have), " instead of ",
                     describe(want), " (", writer, ")");
        return Problem::wrong_result;
      }
    }
    return Problem::none;
  }

 private:
  struct Block {
    int rank = 0, tb = 0;
    int pc = 0;
    int flag = -1;      // the executor's flag: index of the last completed hasdep step
    int send = -1;      // connection indices
    int recv = -1;
    Clock clock;
    std::vector<int> next_flag;                // per step d: first hasdep step >= d, -1 if none
    std::map<int, Clock> flag_clocks;          // clock after each completed hasdep step
  };

  void fail(Problem problem, std::string reason) {
    if (problem_ != Problem::none) return;
    problem_ = problem;
    reason_ = std::move(reason);
  }

  void setup() {
    long long slots = 0;
    for (int rank = 0; rank < program_.ngpus; ++rank) {
      first_block_.push_back(static_cast<int>(blocks_.size()));
      layouts_.emplace_back(program_, rank);
      slots += layouts_.back().slots();
      if (slots > kMaxSlots) {
        fail(Problem::unsupported, concat("the program's buffers hold more than ", kMaxSlots, " chunks on all ranks"));
        return;
      }
      for (const ThreadBlock& tb : program_.gpus[rank].thread_blocks) {
        Block block;
        block.rank = rank;
        block.tb = tb.id;
        block.next_flag.assign(tb.steps.size(), -1);
        int next = -1;
        for (int s = static_cast<int>(tb.steps.size()) - 1; s >= 0; --s) {
          if (tb.steps[s].hasdep) next = s;
          block.next_flag[s] = next;
        }
        total_steps_ += static_cast<int>(std::min<std::size_t>(tb.steps.size(), kMaxSteps));
        if (total_steps_ > kMaxSteps) {
          fail(Problem::unsupported, concat("the program has more than ", kMaxSteps, " steps"));
          return;
        }
        blocks_.push_back(std::move(block));
      }
    }
    first_block_.push_back(static_cast<int>(blocks_.size()));
    // Connections: one per (sender, receiver, channel), from both ends.
    std::map<std::tuple<int, int, int>, int> index;
    auto connection = [&](int sender, int receiver, int chan) {
      auto [it, fresh] = index.emplace(std::tuple{sender, receiver, chan}, static_cast<int>(connections_.size()));
      if (fresh) {
        Connection made;
        made.sender = sender;
        made.receiver = receiver;
        made.chan = chan;
        connections_.push_back(std::move(made));
      }
      return it->second;
    };
    for (std::size_t g = 0; g < blocks_.size(); ++g) {
      Block& block = blocks_[g];
      const ThreadBlock& tb = program_.gpus[block.rank].thread_blocks[block.tb];
      if (tb.send >= 0) {
        block.send = connection(block.rank, tb.send, tb.chan);
        connections_[block.send].sender_tb = static_cast<int>(g);
      }
      if (tb.recv >= 0) {
        block.recv = connection(tb.recv, block.rank, tb.chan);
        connections_[block.recv].receiver_tb = static_cast<int>(g);
      }
    }
    std::sort(connections_.begin(), connections_.end(), [](const Connection& a, const Connection& b) {
      return std::tie(a.sender, a.receiver, a.chan) < std::tie(b.sender, b.receiver, b.chan);
    });
    for (std::size_t k = 0; k < connections_.size(); ++k) {
      if (connections_[k].sender_tb >= 0) blocks_[connections_[k].sender_tb].send = static_cast<int>(k);
      if (connections_[k].receiver_tb >= 0) blocks_[connections_[k].receiver_tb].recv = static_cast<int>(k);
    }
    // Every local chunk a step touches must lie in the buffer the collective has.
    for (std::size_t g = 0; g < blocks_.size() && problem_ == Problem::none; ++g) {
      const Block& block = blocks_[g];
      const RankLayout& layout = layouts_[block.rank];
      const ThreadBlock& tb = program_.gpus[block.rank].thread_blocks[block.tb];
      for (const Step& step : tb.steps) {
        for (bool src : {true, false}) {
          if (src ? !reads_src(step.type) : !writes_dst(step.type)) continue;
          const Buffer buffer = src ? step.srcbuf : step.dstbuf;
          const long long offset = src ? step.srcoff : step.dstoff;
          if (step.cnt > 0 && (layout.slot(buffer, offset) < 0 || layout.slot(buffer, offset + step.cnt - 1) < 0)) {
            fail(Problem::wrong_result,
                 concat("wrong result: ", where(program_, block.rank, block.tb, step.s), " touches chunks ",
                        chunk_name(buffer, offset), "..", chunk_name(buffer, offset + step.cnt - 1),
                        ", past the ", layout.size(buffer), " chunk(s) buffer ", buffer_letter(buffer), " has in a ",
                        program_.coll_name, " on ", program_.ngpus, " ranks with nchunksperloop=\"",
                        program_.nchunksperloop, "\""));
            return;
          }
          if (!src && buffer == Buffer::input && !program_.inplace && step.cnt > 0) {
            fail(Problem::wrong_result,
                 concat("wrong result: ", where(program_, block.rank, block.tb, step.s), " writes chunk ",
                        chunk_name(buffer, offset), " of the input, which an out-of-place program (inplace=\"0\") "
                        "must leave as the caller gave it"));
            return;
          }
        }
      }
    }
    memory_.resize(program_.ngpus);
    shadows_.resize(program_.ngpus);
    for (int rank = 0; rank < program_.ngpus; ++rank) {
      const RankLayout& layout = layouts_[rank];
      memory_[rank].assign(layout.slots(), Contents{});
      shadows_[rank].assign(layout.slots(), Shadow{});
      for (int c = 0; c < layout.size(Buffer::input); ++c) memory_[rank][layout.slot(Buffer::input, c)] = {{{rank, c}, 1}};
    }
    if (check_races_) {
      for (Block& block : blocks_) block.clock.assign(blocks_.size(), 0);
    }
  }

  const Step& step_of(const Block& block) const {
    return program_.gpus[block.rank].thread_blocks[block.tb].steps[block.pc];
  }
  int steps_in(const Block& block) const {
    return static_cast<int>(program_.gpus[block.rank].thread_blocks[block.tb].steps.size());
  }

  bool ready(int g) const {
    const Block& block = blocks_[g];
    if (block.pc >= steps_in(block)) return false;
    const Step& step = step_of(block);
    if (step.depid >= 0) {
      const Block& other = blocks_[first_block_[block.rank] + step.depid];
      if (other.flag < step.deps) return false;
    }
    if (receives(step.type) && connections_[block.recv].queue.empty()) return false;
    if (sends(step.type) && capacity_ > 0 &&
        static_cast<int>(connections_[block.send].queue.size()) >= capacity_) {
      return false;
    }
    return true;
  }

  static void join(Clock& into, const Clock& from) {
    for (std::size_t k = 0; k < into.size() && k < from.size(); ++k) into[k] = std::max(into[k], from[k]);
  }

  bool ordered_before(const Access& earlier, int g) const {
    return earlier.tb == g || blocks_[g].clock[earlier.tb] >= earlier.epoch;
  }

  std::string access_text(const Access& access) const {
    return concat(where(program_, access.rank, access.local_tb, access.s), access.write ? " writes " : " reads ",
                  chunk_name(access.buffer, access.index));
  }

  void touch(int g, Buffer buffer, int index, bool write) {
    Block& block = blocks_[g];
    const int slot = layouts_[block.rank].slot(buffer, index);
    Shadow& shadow = shadows_[block.rank][slot];
    Access access;
    access.tb = g;
    access.epoch = check_races_ ? block.clock[g] : 0;
    access.rank = block.rank;
    access.local_tb = block.tb;
    access.s = block.pc;
    access.write = write;
    access.buffer = buffer;
    access.index = index;
    if (check_races_ && race_.empty()) {
      const Access* conflict = nullptr;
      if (shadow.last_write.tb >= 0 && !ordered_before(shadow.last_write, g)) conflict = &shadow.last_write;
      if (write && !conflict) {
        for (const Access& read : shadow.reads) {
          if (!ordered_before(read, g)) {
            conflict = &read;
            break;
          }
        }
      }
      if (conflict) {
        const bool aliased = conflict->buffer != access.buffer || conflict->index != access.index;
        race_ = concat("race on rank ", block.rank, ": ", access_text(access), " and ", access_text(*conflict),
                       aliased ? " (the same chunk, aliased in place)" : " (the same chunk)",
                       ", and no dependency or message orders the two");
      }
    }
    if (write) {
      shadow.last_write = access;
      shadow.reads.clear();
    } else if (check_races_) {
      auto same = std::find_if(shadow.reads.begin(), shadow.reads.end(), [g](const Access& a) { return a.tb == g; });
      if (same != shadow.reads.end()) {
        *same = access;
      } else {
        shadow.reads.push_back(access);
      }
    }
  }

  std::vector<Contents> read(int g, Buffer buffer, int offset, int cnt) {
    const Block& block = blocks_[g];
    std::vector<Contents> values;
    for (int k = 0; k < cnt; ++k) {
      touch(g, buffer, offset + k, false);
      values.push_back(memory_[block.rank][layouts_[block.rank].slot(buffer, offset + k)]);
    }
    return values;
  }

  void write(int g, Buffer buffer, int offset, const std::vector<Contents>& values) {
    const Block& block = blocks_[g];
    for (std::size_t k = 0; k < values.size(); ++k) {
      touch(g, buffer, offset + static_cast<int>(k), true);
      memory_[block.rank][layouts_[block.rank].slot(buffer, offset + static_cast<int>(k))] = values[k];
    }
  }

  void execute(int g) {
    Block& block = blocks_[g];
    const Step& step = step_of(block);
    if (check_races_) {
      ++block.clock[g];
      if (step.depid >= 0) {
        const int other = first_block_[block.rank] + step.depid;
        const int flagged = blocks_[other].next_flag[step.deps];
        join(block.clock, blocks_[other].flag_clocks.at(flagged));
      }
    }
    std::vector<Contents> values;
    if (receives(step.type)) {
      Connection& connection = connections_[block.recv];
      Message message = std::move(connection.queue.front());
      connection.queue.pop_front();
      if (static_cast<int>(message.payload.size()) != step.cnt) {
        fail(Problem::mismatched_message,
             concat("mismatched message: ", where(program_, block.rank, block.tb, block.pc), " receives ", step.cnt,
                    " chunk(s) from rank ", connection.sender, " on channel ", connection.chan, ", but the message it takes, sent by ",
                    where(program_, message.rank, message.tb, message.s), ", holds ", message.payload.size()));
        return;
      }
      if (check_races_) join(block.clock, message.clock);
      values = std::move(message.payload);
    }
    const bool reduces = step.type == StepType::recv_reduce_copy || step.type == StepType::recv_reduce_send ||
                         step.type == StepType::recv_reduce_copy_send;
    if (step.type == StepType::send || step.type == StepType::copy) {
      values = read(g, step.srcbuf, step.srcoff, step.cnt);
    } else if (reduces) {
      const std::vector<Contents> local = read(g, step.srcbuf, step.srcoff, step.cnt);
      for (std::size_t k = 0; k < values.size(); ++k) add_into(values[k], local[k]);
    } else if (step.type == StepType::reduce) {
      const std::vector<Contents> local = read(g, step.srcbuf, step.srcoff, step.cnt);
      values = read(g, step.dstbuf, step.dstoff, step.cnt);
      for (std::size_t k = 0; k < values.size(); ++k) add_into(values[k], local[k]);
    }
    if (writes_dst(step.type)) write(g, step.dstbuf, step.dstoff, values);
    if (sends(step.type)) {
      Connection& connection = connections_[block.send];
      Message message;
      message.payload = std::move(values);
      message.rank = block.rank;
      message.tb = block.tb;
      message.s = block.pc;
      if (check_races_) message.clock = block.clock;
      connection.queue.push_back(std::move(message));
      ++connection.sent;
      connection.peak = std::max(connection.peak, static_cast<int>(connection.queue.size()));
    }
    if (step.hasdep) {
      block.flag = block.pc;
      if (check_races_) block.flag_clocks[block.pc] = block.clock;
    }
    ++block.pc;
    ++done_;
  }

  // Every thread block that cannot finish, with what its next step waits for.
  std::string deadlock_reason() const {
    std::string text = concat("deadlock: ", total_steps_ - done_, " of ", total_steps_, " steps cannot run");
    std::size_t listed = 0, stuck = 0;
    for (const Block& block : blocks_) {
      if (block.pc >= steps_in(block)) continue;
      if (++stuck > kMaxStuckListed) continue;
      ++listed;
      const Step& step = step_of(block);
      text += concat("; ", where(program_, block.rank, block.tb, block.pc), " waits for ");
      if (step.depid >= 0 && blocks_[first_block_[block.rank] + step.depid].flag < step.deps) {
        const Block& other = blocks_[first_block_[block.rank] + step.depid];
        text += concat("rank ", block.rank, " thread block ", step.depid, " step ", step.deps);
        if (other.next_flag[step.deps] < 0) {
          text += concat(", which never flags it (no step from ", step.deps, " on has hasdep=\"1\")");
        } else if (other.pc >= steps_in(other)) {
          text += " (done)";
        } else {
          text += concat(" (that thread block is stuck at step ", other.pc, ")");
        }
      } else if (receives(step.type) && connections_[block.recv].queue.empty()) {
        const Connection& connection = connections_[block.recv];
        text += concat("a message from rank ", connection.sender, " on channel ", connection.chan);
        if (connection.sender_tb < 0) {
          text += concat(", but no thread block of rank ", connection.sender, " sends to rank ", block.rank,
                         " on channel ", connection.chan);
        } else {
          const Block& sender = blocks_[connection.sender_tb];
          text += concat(" (its thread block ", sender.tb,
                         sender.pc >= steps_in(sender) ? " has finished after sending " : " has sent ", connection.sent,
                         " message(s), none left)");
        }
        text += concat(", to write chunk(s) ", step.dstoff >= 0 ? chunk_name(step.dstbuf, step.dstoff) : "-");
      } else if (sends(step.type)) {
        const Connection& connection = connections_[block.send];
        text += concat("room on the connection to rank ", connection.receiver, " channel ", connection.chan, " (",
                       capacity_, " message(s) already waiting)");
      } else {
        text += "nothing it can get";
      }
    }
    if (stuck > listed) text += concat("; and ", stuck - listed, " more stuck thread block(s)");
    const std::string cycle = wait_cycle();
    if (!cycle.empty()) text += "; " + cycle;
    return text;
  }

  // The thread block a stuck one waits for (a dependency, a sender, a full connection's receiver), -1 if none.
  int waits_for(int g) const {
    const Block& block = blocks_[g];
    if (block.pc >= steps_in(block)) return -1;
    const Step& step = step_of(block);
    int other = -1;
    if (step.depid >= 0 && blocks_[first_block_[block.rank] + step.depid].flag < step.deps) {
      other = first_block_[block.rank] + step.depid;
    } else if (receives(step.type) && connections_[block.recv].queue.empty()) {
      other = connections_[block.recv].sender_tb;
    } else if (sends(step.type)) {
      other = connections_[block.send].receiver_tb;
    }
    return other >= 0 && blocks_[other].pc < steps_in(blocks_[other]) ? other : -1;
  }

  // A cycle of thread blocks each waiting for the next, if the wait-for graph has one.
  std::string wait_cycle() const {
    std::vector<int> state(blocks_.size(), 0);  // 0 unseen, 1 on the current path, 2 finished
    for (std::size_t start = 0; start < blocks_.size(); ++start) {
      std::vector<int> path;
      int g = static_cast<int>(start);
      while (g >= 0 && state[g] == 0) {
        state[g] = 1;
        path.push_back(g);
        g = waits_for(g);
      }
      if (g >= 0 && state[g] == 1) {
        std::string text = "cycle: ";
        const auto first = std::find(path.begin(), path.end(), g);
        for (auto it = first; it != path.end(); ++it) {
          text += concat("rank ", blocks_[*it].rank, " thread block ", blocks_[*it].tb, " step ", blocks_[*it].pc, " -> ");
        }
        return text + concat("rank ", blocks_[g].rank, " thread block ", blocks_[g].tb);
      }
      for (int k : path) state[k] = 2;
    }
    return {};
  }

  const Program& program_;
  int capacity_;  // messages per connection, 0 = unbounded
  bool check_races_;
  std::vector<RankLayout> layouts_;
  std::vector<std::vector<Contents>> memory_;
  std::vector<std::vector<Shadow>> shadows_;
  std::vector<Block> blocks_;
  std::vector<int> first_block_;  // per rank, index of its thread block 0 in blocks_
  std::vector<Connection> connections_;
  int total_steps_ = 0;
  int done_ = 0;
  Problem problem_ = Problem::none;
  std::string reason_;
  std::string race_;
};

inline std::string shape_problem(const Program& program) {
  if (program.ngpus < 1 || static_cast<int>(program.gpus.size()) != program.ngpus) {
    return concat("the program has ", program.gpus.size(), " gpus but ngpus=\"", program.ngpus, "\"");
  }
  if (program.coll != Collective::all_reduce && program.coll != Collective::all_gather &&
      program.coll != Collective::reduce_scatter && program.coll != Collective::all_to_all) {
    return concat("collective ", chorus::to_string(program.coll), " is not verified (allreduce, allgather, "
                  "reduce_scatter, alltoall are)");
  }
  if (program.nchunksperloop < 1 || program.nchunksperloop % program.ngpus != 0) {
    if (program.coll != Collective::all_reduce || program.nchunksperloop < 1) {
      return concat("nchunksperloop=\"", program.nchunksperloop, "\" is not a positive multiple of ngpus=\"",
                    program.ngpus, "\", as a ", program.coll_name, " needs");
    }
  }
  for (int rank = 0; rank < program.ngpus; ++rank) {
    const Gpu& gpu = program.gpus[rank];
    if (gpu.id != rank) return concat("gpu ", rank, " has id ", gpu.id);
    for (std::size_t t = 0; t < gpu.thread_blocks.size(); ++t) {
      const ThreadBlock& tb = gpu.thread_blocks[t];
      if (tb.id != static_cast<int>(t)) return concat("rank ", rank, " thread block ", t, " has id ", tb.id);
      if (tb.send >= program.ngpus || tb.recv >= program.ngpus || tb.send < -1 || tb.recv < -1) {
        return concat("rank ", rank, " thread block ", t, " names a peer outside 0..", program.ngpus - 1);
      }
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Step& step = tb.steps[s];
        const std::string at = concat("rank ", rank, " thread block ", t, " step ", s);
        if (step.cnt < 0) return at + " has a negative cnt";
        if (static_cast<unsigned>(step.srcbuf) > static_cast<unsigned>(Buffer::scratch) ||
            static_cast<unsigned>(step.dstbuf) > static_cast<unsigned>(Buffer::scratch)) {
          return at + " names a buffer other than i, o, s";
        }
        if ((sends(step.type) && tb.send < 0) || (receives(step.type) && tb.recv < 0)) {
          return at + " sends or receives in a thread block without that peer";
        }
        if (step.depid >= static_cast<int>(gpu.thread_blocks.size()) ||
            (step.depid >= 0 && (step.deps < 0 || step.deps >= static_cast<int>(gpu.thread_blocks[step.depid].steps.size())))) {
          return at + " depends on a step that does not exist";
        }
      }
    }
  }
  return {};
}

}  // namespace verify_msccl_detail

// Proves the program computes its collective for every rank, or says why not (Verification::reason
// names the rank, thread block, step and chunk). Never throws for a program that parse_msccl
// accepted; a hand-built Program it cannot check comes back as Problem::unsupported.
inline Verification verify_msccl(const Program& program) {
  using namespace verify_msccl_detail;
  Verification result;
  if (std::string shape = shape_problem(program); !shape.empty()) {
    result.problem = Problem::unsupported;
    result.reason = "cannot verify: " + shape;
    return result;
  }
  long long blocks = 0, hasdeps = 0;
  for (const Gpu& gpu : program.gpus) {
    blocks += static_cast<long long>(gpu.thread_blocks.size());
    for (const ThreadBlock& tb : gpu.thread_blocks) {
      for (const Step& step : tb.steps) hasdeps += step.hasdep ? 1 : 0;
    }
  }
  result.races_checked = blocks * (blocks + hasdeps + 1) <= kMaxClockCells;
  Simulation eager(program, 0, result.races_checked);
  Problem problem = eager.run();
  result.steps = eager.total_steps();
  std::string why = eager.reason();
  if (problem == Problem::none && !eager.race().empty()) {
    problem = Problem::race;
    why = eager.race();
  }
  if (problem == Problem::none) problem = eager.check_end(why);
  if (problem != Problem::none) {
    result.problem = problem;
    result.reason = why;
    return result;
  }
  // The least capacity per connection with which the program still finishes: more room never
  // stops a run that finished, so doubling from 1 and then halving the gap finds it; the eager run's
  // peak always suffices.
  int peak = 0;
  for (const Connection& connection : eager.connections()) peak = std::max(peak, connection.peak);
  int low = peak == 0 ? 0 : 1, high = peak;
  for (int capacity = 1; capacity < high; capacity *= 2) {
    if (Simulation(program, capacity, false).run() == Problem::none) {
      high = capacity;
      break;
    }
    low = capacity + 1;
  }
  while (low < high) {
    const int mid = low + (high - low) / 2;
    Simulation bounded(program, mid, false);
    if (bounded.run() == Problem::none) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  result.buffering = high;
  Simulation needed(program, high, false);
  needed.run();
  for (std::size_t k = 0; k < eager.connections().size(); ++k) {
    const Connection& connection = eager.connections()[k];
    ConnectionUse use;
    use.sender = connection.sender;
    use.receiver = connection.receiver;
    use.chan = connection.chan;
    use.messages = connection.sent;
    use.unbounded = connection.peak;
    use.buffered = needed.connections()[k].peak;
    result.connections.push_back(use);
  }
  result.ok = true;
  return result;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::msccl
