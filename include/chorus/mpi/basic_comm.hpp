// The communicator interface over MPI, shared by mpi::Comm (chorus's schedules over MPI
// point-to-point, comm.hpp) and mpi::NativeComm (MPI's own collectives, native_comm.hpp). They
// differ only in the engine that moves a checked collective's bytes; everything else is here:
// argument checks and the call descriptor (runtime/call_check.hpp), the per-call agreement check
// and bounded waits (endpoint.hpp), failure release (fault_channel.hpp), send/recv, barrier, split.
//
// Semantics are the contract's (docs/communicator.md), as host::Comm has them:
//   - send is synchronous (MPI_Issend: returns once the receiver has matched it);
//   - split(color < 0, key) returns a null communicator (size() == 0, rank() == -1);
//   - a failure mid-call (timeout, mismatch, MPI error) is sent to every rank of the communicator
//     and of every communicator split from the same original, which all get chorus::Error (the
//     cause's code for mismatch and timeout, else peer_failed); the communicators stay failed.
// A communicator is movable, not copyable; like an MPI communicator, one thread uses it at a time
// (communicators of one family may be used by different threads: MPI_THREAD_MULTIPLE).
// Construction and split are collective like MPI's and wait inside MPI for every rank; split first
// checks, bounded, that every rank is making the same call. After a failed Comm collective the caller
// may free its buffers (the call drains its messages first, bounded: message_transport.hpp); after a
// failed NativeComm collective, or a failed send/recv, MPI may still read or write them: keep them
// alive while the communicator lives, or end the job.
#pragma once

#include "mpi_header.hpp"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "../runtime/call_check.hpp"
#include "../runtime/element_ops.hpp"
#include "../runtime/flight_record_json.hpp"
#include "../runtime/own_record.hpp"
#include "../runtime/flight_recorder.hpp"
#include "../runtime/collective_front.hpp"
#include "../runtime/validate.hpp"
#include "check.hpp"
#include "endpoint.hpp"
#include "message_transport.hpp"

CHORUS_NAMESPACE_BEGIN namespace mpi {

template <class Engine>
class BasicComm : public runtime::CollectiveFront<BasicComm<Engine>> {
 public:
  BasicComm() = default;  // a null communicator
  // Duplicates `comm`; MPI must be initialised (see Session). Collective over `comm`.
  explicit BasicComm(MPI_Comm comm) : BasicComm(comm, nullptr) {}

  int rank() const { return state_ ? state_->endpoint.rank() : -1; }
  int size() const { return state_ ? state_->endpoint.size() : 0; }
  explicit operator bool() const { return state_ != nullptr; }

  // all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, typed and type-erased, and typed
  // send/recv: runtime::CollectiveFront.
  using runtime::CollectiveFront<BasicComm<Engine>>::send;
  using runtime::CollectiveFront<BasicComm<Engine>>::recv;

  // Messages over 1 GiB travel as pieces; every piece but the last is tagged kMorePieces, so a recv
  // never joins two sends into one message or splits one between two recvs without noticing.
  void send(const void* data, std::size_t count, DataType type, int peer) {
    const std::size_t bytes = checked_message("send", data, count, type, peer);
    guarded([&] {
      detail::Endpoint& e = state_->endpoint;
      std::vector<MPI_Request> requests;
      const auto* bytes_at = static_cast<const std::byte*>(data);
      for (std::size_t offset = 0, n = detail::message_count(bytes); n > 0; --n, offset += detail::kMaxMessageBytes) {
        requests.push_back(MPI_REQUEST_NULL);
        check_mpi(MPI_Issend(bytes_at + offset, piece(bytes, offset), MPI_BYTE, peer, n > 1 ? kMorePieces : kLastPiece,
                             e.p2p(), &requests.back()),
                  "send", e.name(), "MPI_Issend");
      }
      e.wait(requests.data(), static_cast<int>(requests.size()),
             [&] { return chorus::detail::concat("rank ", peer, " to receive (send is synchronous)"); });
    });
  }

  void recv(void* data, std::size_t count, DataType type, int peer) {
    const std::size_t bytes = checked_message("recv", data, count, type, peer);
    guarded([&] {
      detail::Endpoint& e = state_->endpoint;
      auto* bytes_at = static_cast<std::byte*>(data);
      for (std::size_t offset = 0, n = detail::message_count(bytes); n > 0; --n, offset += detail::kMaxMessageBytes) {
        // Probe first, so a message of the wrong size is reported rather than truncated. It stays
        // unreceived then, so the sender, still in its synchronous send, is released by the failure.
        MPI_Status status;
        int arrived = 0;
        e.wait_for(
            [&] {
              check_mpi(MPI_Iprobe(peer, MPI_ANY_TAG, e.p2p(), &arrived, &status), "recv", e.name(), "MPI_Iprobe");
              return arrived != 0;
            },
            [&] { return chorus::detail::concat("a message from rank ", peer); });
        int got = 0;
        MPI_Get_count(&status, MPI_BYTE, &got);
        const bool last_sent = status.MPI_TAG == kLastPiece, last_expected = n == 1;
        if (got != piece(bytes, offset) || last_sent != last_expected) {
          throw make_error(ErrorCode::mismatch, "recv", e.name(), "rank ", peer, " sent ",
                           last_sent ? chorus::detail::concat(offset + static_cast<std::size_t>(got))
                                     : chorus::detail::concat("more than ", offset + static_cast<std::size_t>(got)),
                           " bytes; this recv expects ", bytes);
        }
        check_mpi(MPI_Recv(bytes_at + offset, got, MPI_BYTE, peer, status.MPI_TAG, e.p2p(), MPI_STATUS_IGNORE), "recv",
                  e.name(), "MPI_Recv");
      }
    });
  }

  // Returns when every rank has called it; bounded like every wait.
  void barrier() {
    runtime::check_comm("barrier", state_ != nullptr);
    runtime::CallDescriptor call;
    call.kind = runtime::CallKind::barrier;
    rendezvous("barrier", call);
  }

  // Every call completes before it returns (host memory; send is synchronous), so there is nothing to
  // wait for; like every call, it refuses a null communicator.
  void wait() const { runtime::check_comm("wait", state_ != nullptr); }

  // Writes this rank's flight record (its last CHORUS_TRACE_BUFFER calls on this communicator) as
  // JSON, the format of host::Comm::dump_trace with one rank: each process holds only its own, so
  // give each rank its own path; chorus-trace-summary merges the files. Throws chorus::Error when the
  // file cannot be written.
  void dump_trace(const std::string& path) const {
    runtime::check_comm("dump_trace", state_ != nullptr);
    const detail::Endpoint& e = state_->endpoint;
    runtime::dump_own_record(path, e.recorder(), e.rank(), e.size(), e.comm_name(), e.name());
  }

  // MPI_Comm_split, with the contract's null communicator for colour < 0. Collective.
  BasicComm split(int color, int key) {
    runtime::check_comm("split", state_ != nullptr);
    runtime::CallDescriptor call;
    call.kind = runtime::CallKind::split;
    detail::Endpoint& e = state_->endpoint;
    e.begin("split", call);
    MPI_Comm part = MPI_COMM_NULL;
    guarded([&] {
      // Every rank agrees before any enters MPI_Comm_split, which blocks until all have; nothing
      // between the two can throw, so no rank that voted yes stays away.
      e.agree();
      check_mpi(MPI_Comm_split(e.data(), color < 0 ? MPI_UNDEFINED : color, key, &part), "split", e.name(),
                "MPI_Comm_split");
      e.finish();
    });
    if (part == MPI_COMM_NULL) return BasicComm();
    BasicComm result(part, e.fault());
    detail::free_comm(part);
    return result;
  }

 private:
  struct State {
    State(MPI_Comm comm, std::shared_ptr<detail::FaultChannel> family)
        : endpoint(comm, std::move(family), Engine::kName) {}
    detail::Endpoint endpoint;
    Engine engine;
  };

  BasicComm(MPI_Comm comm, std::shared_ptr<detail::FaultChannel> family)
      : state_(std::make_unique<State>(comm, std::move(family))) {}

  static constexpr int kLastPiece = 0;
  static constexpr int kMorePieces = 1;

  static int piece(std::size_t bytes, std::size_t offset) {
    return static_cast<int>(std::min(detail::kMaxMessageBytes, bytes - std::min(bytes, offset)));
  }

  // Runs a call's communication; a failure in it releases every peer before it propagates.
  // The flight recorder's entry of a collective call (posted by Endpoint::begin) ends here too.
  template <class Fn>
  void guarded(Fn&& fn) {
    runtime::FlightRecorder& recorder = state_->endpoint.recorder();
    try {
      fn();
    } catch (const Error& error) {
      recorder.end(runtime::CallState::failed);
      state_->endpoint.fail(error);  // no-op once this rank knows of a failure (a release included)
      throw state_->endpoint.explained(error);  // + this rank's own record, dumped under CHORUS_TRACE_DUMP
    } catch (const std::exception& error) {
      recorder.end(runtime::CallState::failed);
      state_->endpoint.fail(Error(ErrorCode::internal, error.what()));
      throw;
    }
    recorder.end(runtime::CallState::done);
  }

  std::size_t checked_message(const char* name, const void* data, std::size_t count, DataType type, int peer) {
    runtime::check_comm(name, state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    const std::size_t bytes = runtime::check_point_to_point(name, e.name(), e.size(), data, count, type, peer);
    e.start(name);
    return bytes;
  }

  // A call with no data: the descriptor check, then an MPI_Ibarrier, both bounded.
  void rendezvous(const char* name, const runtime::CallDescriptor& call) {
    detail::Endpoint& e = state_->endpoint;
    e.begin(name, call);
    guarded([&] {
      MPI_Request request = MPI_REQUEST_NULL;
      check_mpi(MPI_Ibarrier(e.data(), &request), name, e.name(), "MPI_Ibarrier");
      e.wait(&request, 1, [] { return std::string("every rank to arrive"); });
      e.finish();
    });
  }

  friend class runtime::CollectiveFront<BasicComm<Engine>>;
  template <class T>
  void typed_collective(const runtime::CollectiveArgs& args) {
    collective(args, runtime::element_ops<T>());
  }
  void erased_collective(const runtime::CollectiveArgs& args) { collective(args, runtime::element_ops(args.type)); }

  void collective(const runtime::CollectiveArgs& args, const runtime::ElementOps* ops) {
    const char* name = traits(args.collective).name;
    runtime::check_comm(name, state_ != nullptr);
    detail::Endpoint& e = state_->endpoint;
    runtime::CheckedCall checked = runtime::check_collective(args, e.name(), e.size());
    state_->engine.prepare(args, checked, e);  // resolves the pattern; refuses what the engine cannot do
    try {
      e.begin(name, checked.descriptor);
    } catch (const Error&) {
      // Released as it enters: it sent nothing, but peers that ran the call may have sent to it, and
      // they wait for it to end their drain (message_transport.hpp). A local refusal (a malformed
      // knob) leaves the family running: nothing to drain then.
      if (Engine::kDrains && e.fault()->failed()) detail::MessageTransport(e).drain();
      throw;
    }
    guarded([&] {
      state_->engine.run(args, checked, ops, e);
      e.finish();
    });
    if (traits(args.collective).reduces && checked.descriptor.op == ReduceOp::avg && checked.uses_recv) {
      ops->finish_avg(args.recv, args.count, e.size());
    }
  }

  std::unique_ptr<State> state_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::mpi
