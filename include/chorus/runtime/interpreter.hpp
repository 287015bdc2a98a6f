// The step interpreter: runs one rank's steps of an algo::Schedule, moving bytes through a
// transport. It is the only loop that executes schedules; a backend supplies the transport, which
// decides how bytes move between ranks:
//
//   Buffers attach(const algo::Schedule&, Buffers caller, std::size_t element_size)
//       the buffers for this call, with schedule.scratch_count elements of scratch supplied (and
//       published, if peers read it)
//   void send(std::size_t index, const algo::Step& step, const std::byte* src, std::size_t bytes)
//       post step `index`, a send of [src, src + bytes); must not wait for the receiver
//   const std::byte* receive(std::size_t index, const algo::Step& step, std::size_t bytes)
//       wait for the send that step `index` matches and return its bytes, readable until received()
//   void received(std::size_t index, const algo::Step& step, std::size_t bytes)
//       the bytes have been copied or reduced: acknowledge them to the sender
//   void before_write(std::size_t index, std::byte* dst, std::size_t bytes)
//       wait until no send of this rank still in flight reads [dst, dst + bytes)
//
// An optional observer sees each step begin, its received data arrive, and the step end (flight
// recorder, step trace); the default does nothing and compiles away:
//   void begin(std::size_t index, const algo::Step& step, std::size_t bytes)
//   void arrived(std::size_t index)               recv steps: the matching send's data is readable
//   void end(std::size_t index, const algo::Step& step, std::size_t bytes)
//
// The shared-memory transport (host/shared_memory_transport.hpp) publishes pointers and lets the
// receiver read the sender's memory; a message-passing transport copies at send or receive. Both
// compute the same bits: the interpreter does all copying and combining itself, in step order.
#pragma once

#include <cstddef>
#include <cstring>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "element_ops.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

struct Buffers {
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
};

// Resolves schedule spans to this rank's addresses.
class SpanResolver {
 public:
  SpanResolver(const char* call, int rank, const Buffers& buffers, std::size_t element_size)
      : call_(call), rank_(rank), buffers_(buffers), element_size_(element_size) {}

  const std::byte* read(algo::Span span, std::size_t bytes) const {
    const std::byte* base = span.buffer == algo::Buffer::input    ? buffers_.input
                            : span.buffer == algo::Buffer::output ? buffers_.output
                                                                  : buffers_.scratch;
    if (base == nullptr) {
      if (bytes == 0) return nullptr;
      throw make_error(ErrorCode::internal, call_, rank_, "schedule touches the ", algo::to_string(span.buffer),
                       " buffer, which this call does not have");
    }
    return base + span.offset * element_size_;
  }

  std::byte* write(algo::Span span, std::size_t bytes) const {
    if (span.buffer == algo::Buffer::input) {
      throw make_error(ErrorCode::internal, call_, rank_, "schedule writes the input buffer");
    }
    return const_cast<std::byte*>(read(span, bytes));
  }

 private:
  const char* call_;
  int rank_;
  Buffers buffers_;
  std::size_t element_size_;
};

// What the steps compute with: the element size and type-specific work, and the call's op.
struct StepMath {
  std::size_t element_size = 1;
  const ElementOps* ops = nullptr;
  ReduceOp op = ReduceOp::sum;
};

struct NoStepObserver {
  void begin(std::size_t, const algo::Step&, std::size_t) {}
  void arrived(std::size_t) {}
  void end(std::size_t, const algo::Step&, std::size_t) {}
};

template <class Transport, class Observer = NoStepObserver>
void interpret(const char* call, int rank, const algo::Schedule& schedule, Buffers caller, const StepMath& math,
               Transport& transport, Observer&& observer = Observer{}) {
  const std::size_t es = math.element_size;
  const SpanResolver at(call, rank, transport.attach(schedule, caller, es), es);
  const auto& steps = schedule.steps[static_cast<std::size_t>(rank)];
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const algo::Step& step = steps[i];
    const std::size_t bytes = step.count * es;
    observer.begin(i, step, bytes);
    switch (step.op) {
      case algo::Op::send: transport.send(i, step, at.read(step.src, bytes), bytes); break;
      case algo::Op::recv_copy:
      case algo::Op::recv_reduce: {
        std::byte* dst = at.write(step.dst, bytes);
        transport.before_write(i, dst, bytes);
        const std::byte* theirs = transport.receive(i, step, bytes);
        observer.arrived(i);
        if (bytes > 0) {
          if (step.op == algo::Op::recv_copy) {
            std::memcpy(dst, theirs, bytes);
          } else {
            math.ops->combine(math.op, at.read(step.src, bytes), theirs, dst, step.count);
          }
        }
        transport.received(i, step, bytes);
        break;
      }
      case algo::Op::copy: {
        const std::byte* src = at.read(step.src, bytes);
        std::byte* dst = at.write(step.dst, bytes);
        if (bytes == 0 || src == dst) break;  // in place: the data is already there
        transport.before_write(i, dst, bytes);
        std::memmove(dst, src, bytes);
        break;
      }
      case algo::Op::reduce: {
        const std::byte* src = at.read(step.src, bytes);
        std::byte* dst = at.write(step.dst, bytes);
        if (bytes == 0) break;
        transport.before_write(i, dst, bytes);
        math.ops->combine(math.op, dst, src, dst, step.count);
        break;
      }
    }
    observer.end(i, step, bytes);
  }
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
