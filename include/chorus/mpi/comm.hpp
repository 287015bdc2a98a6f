// chorus::mpi::Comm: chorus's own schedules (ring, tree, halving-doubling, ...; every Algorithm the
// host backend has) run over MPI point-to-point by the step interpreter, one process per rank.
//
//   chorus::mpi::Session session(argc, argv);
//   chorus::mpi::Comm comm(MPI_COMM_WORLD);
//   comm.all_reduce(grads.data(), grads.data(), grads.size(), chorus::ReduceOp::avg);
//
// The same schedule, the same interpreter and the same element loops as host::Comm, so the results
// are bit-identical to the host backend's for the same algorithm, and identical on every rank.
// Interface and failure semantics: basic_comm.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../algo/build.hpp"
#include "../algo/printer.hpp"
#include "../core/config.hpp"
#include "../core/log.hpp"
#include "../runtime/call_record.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/element_ops.hpp"
#include "../runtime/interpreter.hpp"
#include "../runtime/schedule_cache.hpp"
#include "basic_comm.hpp"
#include "endpoint.hpp"
#include "message_transport.hpp"
#include "tuning.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi {
namespace detail {

class ScheduledCollectives {
 public:
  static constexpr const char* kName = "mpi::Comm";
  static constexpr bool kDrains = true;  // a failed call drains its messages (message_transport.hpp)

  void prepare(const runtime::CollectiveArgs& args, runtime::CheckedCall& checked, const Endpoint& endpoint) const {
    checked.descriptor.pattern =
        args.algorithm != Algorithm::automatic
            ? algo::pattern_for(args.algorithm)
            : choose_pattern(args.collective, args.count * checked.element_size, endpoint.size());
  }

  void run(const runtime::CollectiveArgs& args, const runtime::CheckedCall& checked, const runtime::ElementOps* ops,
           Endpoint& endpoint) {
    const runtime::CallDescriptor& call = checked.descriptor;
    const algo::Schedule& schedule = cache_.get(
        runtime::schedule_key(call, endpoint.size(), slice_elements(checked.element_size)), store_,
        [&](const algo::Schedule& built) {  // a schedule this rank has not used lately; off: nothing to build
          if (endpoint.rank() != 0 || endpoint.log_level() < LogLevel::info) return;
          log(LogLevel::info, "communicator ", endpoint.comm_name().text, ": ", runtime::describe(call), " (",
              args.count * checked.element_size, " B, ", endpoint.size(), " ranks)");
          if (endpoint.log_level() >= LogLevel::debug) log(LogLevel::debug, "schedule:\n", algo::to_table(built));
        });
    const runtime::Buffers buffers{checked.uses_send ? static_cast<const std::byte*>(args.send) : nullptr,
                                   checked.uses_recv ? static_cast<std::byte*>(args.recv) : nullptr, nullptr};
    MessageTransport transport(endpoint);
    const auto steps = static_cast<std::int32_t>(schedule.steps[static_cast<std::size_t>(endpoint.rank())].size());
    endpoint.recorder().run(steps);
    try {
      runtime::interpret(endpoint.call(), endpoint.rank(), schedule, buffers,
                         runtime::StepMath{checked.element_size, ops, call.op}, transport,
                         runtime::RecordSteps{endpoint.recorder()});
      endpoint.recorder().at_step(steps, -1);  // finishing: waiting for the last acknowledgements
      transport.finish();
      endpoint.finish();  // the agreement's failure drains too, so every rank that ran the schedule joins the drain
    } catch (const Error& error) {
      // Peers first (they stop sending and drain too), then this rank's messages in flight: after
      // that MPI holds none of the caller's buffers, so the caller may free them (message_transport.hpp).
      endpoint.fail(error);
      transport.drain();
      throw;
    }
  }

 private:
  runtime::ScheduleStore store_;
  runtime::ScheduleCache cache_;
};

}  // namespace detail

using Comm = BasicComm<detail::ScheduledCollectives>;
static_assert(check_communicator<Comm>(), "chorus::mpi::Comm must satisfy the communicator contract");

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi
