// to_schedule: a verified MSCCL program as a chorus schedule (algo::Schedule), which the step interpreter
// runs on every backend. An MSCCL rank runs thread blocks side by side, a chorus rank one list of steps, so
// the program is run once symbolically (as verify_msccl runs it: a step goes once its dependency is flagged
// and its message has arrived; sends never wait) and each rank's steps are written in the order they ran.
// That order is one the program allows, so the schedule finishes wherever the program does. Three
// differences between the two executors are bridged with scratch:
//   - an MSCCL message holds the data as it was sent; a chorus send lets the receiver read the sender's
//     memory later (zero copy) and holds back the sender's next write to it. A send whose range the
//     sender overwrites before, in that order, the receiver takes it is sent from a private copy;
//   - MSCCL matches messages per (sender, receiver, channel), chorus per (sender, receiver): a message
//     taken before one sent earlier on another channel has the earlier one received into scratch first
//     ("stashed"), and its receive becomes a local copy or reduction from there;
//   - rrs sends x + src without storing it: chorus reduces into scratch and sends that; and a program
//     that writes input chunks chorus keeps read-only (in-place reduce_scatter) works on a copy of the
//     input in scratch and copies its output chunks back at the end.
// Chunks are count * (input elements) / (input chunks) elements: count must be a multiple of what the
// executor needs (allreduce, alltoall: nchunksperloop; allgather, reduce_scatter: nchunksperloop / ngpus
// per rank). The schedule's pattern field says nothing for an imported program. See docs/msccl.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../../core/collective.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../schedule.hpp"
#include "program.hpp"
#include "verify.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::msccl {

namespace lower_detail {

using chorus::detail::concat;

constexpr const char* kCall = "chorus::algo::msccl::to_schedule";

class Lowering {
 public:
  Lowering(const Program& program, std::size_t count) : program_(program), count_(count) {}

  Schedule run() {
    const int n = program_.ngpus;
    const int input_chunks = program_.coll == Collective::all_gather ? program_.nchunksperloop / n : program_.nchunksperloop;
    const std::size_t input = send_count(program_.coll, count_, n);
    if (count_ == 0 || input % static_cast<std::size_t>(input_chunks) != 0) {
      throw Error(ErrorCode::invalid_argument,
                  concat(kCall, ": ", name(), ": count ", count_, " gives ", input, " input elements per rank, not a "
                         "positive multiple of the ", input_chunks, " input chunks the program has"));
    }
    chunk_ = input / static_cast<std::size_t>(input_chunks);
    shadow_ = program_.inplace && program_.coll == Collective::reduce_scatter;
    // Pass 1 finds the sends that need a private copy; pass 2 (the same order) writes them.
    std::set<int> private_before;
    Schedule schedule = simulate();
    while (private_ != private_before) {
      private_before = private_;
      schedule = simulate();
    }
    link(schedule);
    return schedule;
  }

 private:
  struct Message {
    int from = 0, to = 0;
    Span src{};           // what the receiver reads (chorus span on the sender)
    std::size_t count = 0;
    bool received = false;
    bool stashed = false;
    Span stash{};
  };
  struct Block {
    int rank = 0, tb = 0, pc = 0, flag = -1;
  };

  std::string name() const { return program_.name.empty() ? std::string("the program") : "\"" + program_.name + "\""; }

  // The chorus span of chunk `index` of `buffer` on `rank`, with the in-place aliasing the collective has.
  Span span(int rank, Buffer buffer, int index) const {
    const std::size_t per_rank = static_cast<std::size_t>(program_.nchunksperloop / program_.ngpus);
    std::size_t chunk = static_cast<std::size_t>(index);
    if (buffer == Buffer::scratch) return {Buffer::scratch, chunk * chunk_};
    if (shadow_) {  // i and o both live in the input's copy; o[c] is i[rank * per_rank + c]
      if (buffer == Buffer::output) chunk += static_cast<std::size_t>(rank) * per_rank;
      return {Buffer::scratch, shadow_base_ + chunk * chunk_};
    }
    if (program_.inplace) {
      if (buffer == Buffer::input && program_.coll == Collective::all_gather) chunk += static_cast<std::size_t>(rank) * per_rank;
      return {Buffer::output, chunk * chunk_};
    }
    return {buffer, chunk * chunk_};
  }

  Span scratch(int rank, std::size_t elements) {
    const Span at{Buffer::scratch, next_scratch_[rank]};
    next_scratch_[rank] += elements;
    return at;
  }

  // Every write goes through here: a send of this rank not yet taken that reads the range needs a copy.
  void wrote(int rank, const Span& dst, std::size_t count) {
    for (int m : pending_[rank]) {
      const Message& message = messages_[m];
      if (!message.received && message.src.buffer == dst.buffer && message.src.offset < dst.offset + count &&
          dst.offset < message.src.offset + message.count) {
        private_.insert(m);
      }
    }
  }

  void emit(int rank, algo::Step step) {
    if (algo::writes(step.op)) wrote(rank, step.dst, step.count);
    steps_[rank].push_back(step);
  }
  void copy(int rank, const Span& src, const Span& dst, std::size_t count) {
    if (src.buffer == dst.buffer && src.offset == dst.offset) return;
    emit(rank, {Op::copy, -1, count, src, dst});
  }

  void send(int rank, int to, int chan, Span src, std::size_t count) {
    const int id = static_cast<int>(messages_.size());
    if (private_.count(id)) {
      const Span own = scratch(rank, count);
      copy(rank, src, own, count);
      src = own;
    }
    emit(rank, {Op::send, to, count, src, {}});
    Message message;
    message.from = rank;
    message.to = to;
    message.src = src;
    message.count = count;
    messages_.push_back(message);
    pair_[{rank, to}].push_back(id);
    queue_[{rank, to, chan}].push_back(id);
    pending_[rank].push_back(id);
  }

  // Takes message `id` at `rank`: receives every message its sender sent this rank before it (chorus
  // matches per pair) into scratch, and returns whether `id` itself is still to be received directly.
  bool take(int rank, int id) {
    const Message& wanted = messages_[id];
    if (wanted.stashed) return false;
    auto& order = pair_[{wanted.from, rank}];
    std::size_t& next = taken_[{wanted.from, rank}];
    while (order[next] != id) {
      Message& early = messages_[order[next++]];
      early.stash = scratch(rank, early.count);
      emit(rank, {Op::recv_copy, early.from, early.count, {}, early.stash});
      early.stashed = early.received = true;
    }
    ++next;
    messages_[id].received = true;
    return true;
  }

  // dst = src (+) message, where the message is received now (direct) or waits in its stash.
  void receive_reduce(int rank, int id, bool direct, const Span& src, const Span& dst, std::size_t count) {
    const Message& message = messages_[id];
    if (direct) {
      emit(rank, {Op::recv_reduce, message.from, count, src, dst});
      return;
    }
    copy(rank, src, dst, count);
    emit(rank, {Op::reduce, -1, count, message.stash, dst});
  }

  void execute(Block& block) {
    const ThreadBlock& tb = program_.gpus[block.rank].thread_blocks[block.tb];
    const Step& step = tb.steps[block.pc];
    const int rank = block.rank;
    const std::size_t count = static_cast<std::size_t>(step.cnt) * chunk_;
    const Span src = reads_src(step.type) ? span(rank, step.srcbuf, step.srcoff) : Span{};
    const Span dst = writes_dst(step.type) ? span(rank, step.dstbuf, step.dstoff) : Span{};
    int id = -1;
    bool direct = false;
    if (receives(step.type)) {
      auto& queue = queue_[{tb.recv, rank, tb.chan}];
      id = queue.front();
      queue.pop_front();
      direct = take(rank, id);
    }
    if (count > 0) {
      switch (step.type) {
        case StepType::send: send(rank, tb.send, tb.chan, src, count); break;
        case StepType::recv:
        case StepType::recv_copy_send:
          if (direct) {
            emit(rank, {Op::recv_copy, tb.recv, count, {}, dst});
          } else {
            copy(rank, messages_[id].stash, dst, count);
          }
          if (step.type == StepType::recv_copy_send) send(rank, tb.send, tb.chan, dst, count);
          break;
        case StepType::recv_reduce_copy:
        case StepType::recv_reduce_copy_send:
          receive_reduce(rank, id, direct, src, dst, count);
          if (step.type == StepType::recv_reduce_copy_send) send(rank, tb.send, tb.chan, dst, count);
          break;
        case StepType::recv_reduce_send: {
          const Span sum = scratch(rank, count);
          receive_reduce(rank, id, direct, src, sum, count);
          send(rank, tb.send, tb.chan, sum, count);
          break;
        }
        case StepType::copy: copy(rank, src, dst, count); break;
        case StepType::reduce: emit(rank, {Op::reduce, -1, count, src, dst}); break;
        case StepType::nop: break;
      }
    } else {  // an empty message still takes its place in the FIFO
      if (direct) emit(rank, {Op::recv_copy, tb.recv, 0, {}, {}});
      if (sends(step.type)) send(rank, tb.send, tb.chan, src, 0);
    }
    if (step.hasdep) block.flag = block.pc;
    ++block.pc;
  }

  Schedule simulate() {
    const int n = program_.ngpus;
    const std::size_t in_elements = send_count(program_.coll, count_, n);
    messages_.clear();
    pair_.clear();
    taken_.clear();
    queue_.clear();
    pending_.assign(n, {});
    steps_.assign(n, {});
    next_scratch_.assign(n, 0);
    shadow_base_ = 0;
    std::vector<Block> blocks;
    std::vector<int> first(n + 1, 0);
    for (int rank = 0; rank < n; ++rank) {
      const Gpu& gpu = program_.gpus[rank];
      next_scratch_[rank] = static_cast<std::size_t>(gpu.s_chunks) * chunk_;
      first[rank] = static_cast<int>(blocks.size());
      for (const ThreadBlock& tb : gpu.thread_blocks) blocks.push_back({rank, tb.id, 0, -1});
    }
    first[n] = static_cast<int>(blocks.size());
    if (shadow_) {
      std::size_t most = 0;
      for (int rank = 0; rank < n; ++rank) most = std::max(most, next_scratch_[rank]);
      shadow_base_ = most;
      for (int rank = 0; rank < n; ++rank) {
        next_scratch_[rank] = most + in_elements;
        emit(rank, {Op::copy, -1, in_elements, {Buffer::input, 0}, {Buffer::scratch, most}});
      }
    }
    auto ready = [&](const Block& block) {
      const ThreadBlock& tb = program_.gpus[block.rank].thread_blocks[block.tb];
      if (block.pc >= static_cast<int>(tb.steps.size())) return false;
      const Step& step = tb.steps[block.pc];
      if (step.depid >= 0 && blocks[first[block.rank] + step.depid].flag < step.deps) return false;
      if (receives(step.type)) {
        const auto it = queue_.find({tb.recv, block.rank, tb.chan});
        if (it == queue_.end() || it->second.empty()) return false;
      }
      return true;
    };
    for (bool progress = true; progress;) {
      progress = false;
      for (Block& block : blocks) {
        while (ready(block)) {
          execute(block);
          progress = true;
        }
      }
    }
    for (const Block& block : blocks) {
      if (block.pc < static_cast<int>(program_.gpus[block.rank].thread_blocks[block.tb].steps.size())) {
        throw Error(ErrorCode::internal, concat(kCall, ": ", name(), ": rank ", block.rank, " thread block ", block.tb,
                                                " cannot run step ", block.pc, " though the program was verified"));
      }
    }
    if (shadow_) {
      const std::size_t per_rank = static_cast<std::size_t>(program_.nchunksperloop / n) * chunk_;
      for (int rank = 0; rank < n; ++rank) {
        copy(rank, {Buffer::scratch, shadow_base_ + static_cast<std::size_t>(rank) * per_rank}, {Buffer::output, 0}, per_rank);
      }
    }
    Schedule schedule;
    schedule.collective = program_.coll;
    schedule.ranks = n;
    schedule.count = count_;
    schedule.in_place = program_.inplace;
    for (std::size_t used : next_scratch_) schedule.scratch_count = std::max(schedule.scratch_count, used);
    schedule.steps = steps_;
    return schedule;
  }

  const Program& program_;
  std::size_t count_;
  std::size_t chunk_ = 1;
  bool shadow_ = false;
  std::size_t shadow_base_ = 0;
  std::set<int> private_;  // message ids sent from a private copy
  std::vector<Message> messages_;
  std::map<std::pair<int, int>, std::vector<int>> pair_;           // (from, to) -> messages in send order
  std::map<std::pair<int, int>, std::size_t> taken_;               // (from, to) -> received so far
  std::map<std::tuple<int, int, int>, std::deque<int>> queue_;     // (from, to, chan) -> not yet taken
  std::vector<std::vector<int>> pending_;                          // per rank: messages it sent
  std::vector<std::vector<algo::Step>> steps_;
  std::vector<std::size_t> next_scratch_;
};

}  // namespace lower_detail

// The program as a chorus schedule for a call with `count` elements (as passed to the collective). Throws
// chorus::Error (invalid_argument) when the program does not verify (verify_msccl's reason) or `count`
// does not cut into its chunks.
inline Schedule to_schedule(const Program& program, std::size_t count) {
  const Verification verdict = verify_msccl(program);
  if (!verdict.ok) {
    throw Error(ErrorCode::invalid_argument,
                chorus::detail::concat(lower_detail::kCall, ": ", program.name.empty() ? "the program" : program.name,
                                       " is not verified: ", verdict.reason));
  }
  return lower_detail::Lowering(program, count).run();
}

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::msccl
