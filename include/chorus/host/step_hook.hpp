// What a host rank records about one call as it runs: the flight recorder entry (always, cheap) and,
// while CHORUS_TRACE is set, the call's and each step's slice for the step trace. Passed to the step
// interpreter as its observer (runtime/interpreter.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../algo/schedule.hpp"
#include "../core/config.hpp"
#include "../runtime/call_descriptor.hpp"
#include "../runtime/flight_recorder.hpp"
#include "../runtime/step_trace.hpp"
#include "shared_state.hpp"

CHORUS_NAMESPACE_BEGIN namespace host::detail {

class StepHook {
 public:
  // Records call `sequence` (just begun by the transport) as posted.
  StepHook(const SharedState& state, int rank, std::uint64_t sequence, const runtime::CallDescriptor& call)
      : recorder_(state.slot(rank).recorder), trace_(state.trace()), track_(state.team_rank(rank)) {
    recorder_.post(sequence, call);
    if (trace_ != nullptr) {
      call_.is_call = true;
      call_.comm = state.id();
      call_.rank = rank;
      call_.sequence = sequence;
      call_.call = call;
      call_.start_ns = runtime::steady_now_ns();
    }
  }
  StepHook(const StepHook&) = delete;
  StepHook& operator=(const StepHook&) = delete;

  void run(std::size_t steps) {
    steps_ = static_cast<std::int32_t>(steps);
    recorder_.run(steps_);
  }
  // Past the last step: waiting for peers to acknowledge and to enter the call.
  void finishing() { recorder_.at_step(steps_, -1); }
  void end(runtime::CallState state) {
    recorder_.end(state);
    if (trace_ == nullptr) return;
    call_.failed = state == runtime::CallState::failed;
    call_.end_ns = runtime::steady_now_ns();
    if (step_open_) {  // the step the call failed in: its slice ends with the call
      step_.end_ns = call_.end_ns;
      trace_->add(track_, step_);
    }
    trace_->add(track_, call_);
  }

  // The interpreter's observer.
  void begin(std::size_t index, const algo::Step& step, std::size_t bytes) {
    const bool exchanges = step.op == algo::Op::send || algo::is_recv(step.op);
    recorder_.at_step(static_cast<std::int32_t>(index), exchanges ? step.peer : -1);
    if (trace_ == nullptr) return;
    step_ = call_;
    step_.is_call = false;
    step_.op = step.op;
    step_.index = static_cast<std::int32_t>(index);
    step_.peer = exchanges ? step.peer : -1;
    step_.match = algo::is_recv(step.op) ? static_cast<std::int32_t>(step.match) : -1;
    step_.bytes = bytes;
    step_.start_ns = runtime::steady_now_ns();
    step_open_ = true;
  }
  void arrived(std::size_t) {
    if (trace_ != nullptr) step_.ready_ns = runtime::steady_now_ns();
  }
  void end(std::size_t, const algo::Step&, std::size_t) {
    if (trace_ == nullptr) return;
    step_.end_ns = runtime::steady_now_ns();
    step_open_ = false;
    trace_->add(track_, step_);
  }

 private:
  runtime::FlightRecorder& recorder_;
  runtime::StepTrace* trace_;
  int track_;
  std::int32_t steps_ = 0;
  bool step_open_ = false;
  runtime::TraceEvent call_;
  runtime::TraceEvent step_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host::detail
