// chorus::host::Team: n ranks as n threads of this process. run(fn) calls fn(Comm&) on every rank,
// each on its own thread, and returns when all have returned. If any rank throws, the team is
// aborted so every peer still waiting in chorus is released (with chorus::Error naming the
// failed rank), and run rethrows the original exception, not the consequences. A Team can run
// again after a failed run. The Comm passed to fn, and every communicator split from it, is
// valid only during the run that created it.
#pragma once

#include <atomic>
#include <exception>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/log.hpp"
#include "../runtime/flight_record_json.hpp"
#include "../runtime/step_trace.hpp"
#include "comm.hpp"
#include "fault.hpp"
#include "shared_state.hpp"

CHORUS_NAMESPACE_BEGIN namespace host {

class Team {
 public:
  // Ranks are threads and every pair of ranks shares state, so a team is bounded. At kMaxSize that
  // is 134 MB of acknowledgement counters, and 1 GiB more of point-to-point channels once any rank
  // calls send or recv; 4096 is also the largest team tested (docs/benchmarks.md).
  static constexpr int kMaxSize = 4096;

  explicit Team(int size) : size_(checked_size(size)), running_(std::make_unique<std::atomic<bool>>(false)) {
    try {
      std::vector<int> team_ranks;
      for (int r = 0; r < size_; ++r) team_ranks.push_back(r);
      fault_ = std::make_shared<detail::Fault>(size_);
      world_ = std::make_shared<detail::SharedState>(fault_, std::move(team_ranks), true,
                                                     detail::recorder_capacity(size_));
    } catch (const Error& e) {  // a malformed CHORUS_TRACE_BUFFER
      throw Error(e.code(), chorus::detail::concat("chorus::host::Team: ", e.what()));
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::unsupported,
                  chorus::detail::concat("chorus::host::Team: not enough memory for a team of ", size_, " ranks"));
    }
  }
  // Moving a team that is running would pull its state from under its rank threads: refused.
  Team(Team&& other) : size_(other.size_) {
    other.refuse_if_running("move");
    running_ = std::move(other.running_);
    fault_ = std::move(other.fault_);
    world_ = std::move(other.world_);
    trace_path_ = std::move(other.trace_path_);
  }
  Team& operator=(Team&& other) {
    if (this == &other) return *this;
    refuse_if_running("move-assign to");
    other.refuse_if_running("move");
    size_ = other.size_;
    running_ = std::move(other.running_);
    fault_ = std::move(other.fault_);
    world_ = std::move(other.world_);
    trace_path_ = std::move(other.trace_path_);
    return *this;
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  ~Team() = default;

  int size() const { return size_; }

  // Places the team's ranks on rings and chains in this order (a permutation of 0..size-1), e.g.
  // topo::best_ring_order(topology) so ring neighbours sit on the fastest links. Empty restores
  // 0, 1, ..., size-1. Not while running; split communicators keep their own rank order.
  void set_ring_order(std::vector<int> order) {
    refuse_if_running("set_ring_order");
    if (!order.empty()) {
      std::vector<char> seen(static_cast<std::size_t>(size_), 0);
      if (order.size() != seen.size()) {
        throw Error(ErrorCode::invalid_argument,
                    chorus::detail::concat("chorus::host::Team::set_ring_order: ", order.size(),
                                           " entries for a team of ", size_));
      }
      for (std::size_t i = 0; i < order.size(); ++i) {
        const int rank = order[i];
        if (rank < 0 || rank >= size_ || seen[static_cast<std::size_t>(rank)]) {
          throw Error(ErrorCode::invalid_argument,
                      chorus::detail::concat("chorus::host::Team::set_ring_order: entry ", i, " is ", rank,
                                             ", not a so-far-unused rank of 0..", size_ - 1));
        }
        seen[static_cast<std::size_t>(rank)] = 1;
      }
    }
    world_->set_ring_order(std::move(order));
  }
  const std::vector<int>& ring_order() const { return world_->ring_order(); }

  // Who resolves Algorithm::automatic in the following runs, for the team's communicator and every
  // one split from it: `choose(collective, count, element size, ranks)`, e.g. a
  // model::AutomaticTuner over this machine's calibration (docs/cost-model.md, "Tuning"). It is
  // called on every rank thread at once, so it must be safe to call concurrently and answer every
  // rank alike; an answer that is `automatic` or not an algorithm of the collective fails the call
  // with invalid_argument. An empty function restores the measured thresholds (host/tuning.hpp).
  // Not while running.
  void set_automatic(AutomaticChoice choose) {
    refuse_if_running("set_automatic");
    world_->set_automatic(choose ? std::make_shared<const AutomaticChoice>(std::move(choose)) : nullptr);
  }

  // Writes every rank's flight record of the team's communicator as JSON (as Comm::dump_trace does),
  // settled: between runs no rank is writing, so a failed run's calls read "failed". The records
  // last until the next run starts. Not while running (use Comm::dump_trace from a rank then).
  void dump_trace(const std::string& path) const {
    refuse_if_running("dump_trace of");
    std::ofstream file(path);
    if (file) runtime::write_flight_record_json(file, world_->flight_records(), world_->dump_origin());
    file.close();
    if (!file) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::host::Team::dump_trace: cannot write the flight record to '", path, "'"));
    }
  }

  // Where the following runs write their step trace (Chrome trace-event JSON, docs/debugging.md);
  // overrides CHORUS_TRACE. Empty: CHORUS_TRACE decides again. Not while running.
  void set_trace_path(std::string path) {
    refuse_if_running("set_trace_path");
    trace_path_ = std::move(path);
  }

  template <class Fn>
  void run(Fn&& fn) {
    if (!running_) throw Error(ErrorCode::invalid_argument, "chorus::host::Team::run: this team was moved from");
    bool idle = false;
    if (!running_->compare_exchange_strong(idle, true)) {
      throw Error(ErrorCode::invalid_argument, "chorus::host::Team::run: this team is already running");
    }
    struct Done {
      std::atomic<bool>& running;
      ~Done() { running.store(false); }
    } done{*running_};
    LogLevel log_level = LogLevel::warn;
    try {
      log_level = env::log_level();  // a typo in CHORUS_LOG must not go unnoticed in programs that never log
    } catch (const Error& e) {
      throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::host::Team::run: ", e.what()));
    }
    fault_->reset();
    world_->reset();
    world_->set_log_level(log_level);
    const std::string trace_path = trace_path_.empty() ? env::trace_path() : trace_path_;
    world_->set_trace(trace_path.empty() ? nullptr : std::make_shared<runtime::StepTrace>(size_));
    log(LogLevel::info, "communicator ", world_->id(), ": team of ", size_, " ranks, flight recorder of ",
        world_->recorder_calls(), " calls per rank", trace_path.empty() ? "" : ", step trace to ", trace_path);

    const auto n = static_cast<std::size_t>(size_);
    std::vector<std::exception_ptr> errors(n);
    std::vector<char> released(n, 0);
    auto body = [&](int rank) {
      const auto r = static_cast<std::size_t>(rank);
      try {
        Comm comm(world_, rank);
        fn(comm);
      } catch (const detail::Released&) {
        errors[r] = std::current_exception();
        released[r] = 1;
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        fault_->abort(rank, ErrorCode::peer_failed, e.what());
      } catch (...) {
        errors[r] = std::current_exception();
        fault_->abort(rank, ErrorCode::peer_failed, "threw an exception that is not a std::exception");
      }
      fault_->mark_exited(rank);
    };

    std::vector<std::thread> threads;
    threads.reserve(n);
    try {
      for (int rank = 0; rank < size_; ++rank) threads.emplace_back(body, rank);
    } catch (const std::exception& e) {  // could not start every thread: release the ones that run, then report
      const int rank = static_cast<int>(threads.size());
      fault_->abort(rank, ErrorCode::peer_failed, "its thread could not be started");
      for (int r = rank; r < size_; ++r) fault_->mark_exited(r);
      for (std::thread& thread : threads) thread.join();
      throw Error(ErrorCode::unsupported, chorus::detail::concat("chorus::host::Team::run: could not start the thread "
                                                                 "of rank ", rank, " of ", size_, ": ", e.what()));
    }
    for (std::thread& thread : threads) thread.join();
    if (!trace_path.empty()) write_trace(trace_path);

    // The rank that aborted the team holds the cause; others hold consequences.
    const int cause = fault_->cause();
    if (cause >= 0 && cause < size_ && errors[static_cast<std::size_t>(cause)] &&
        !released[static_cast<std::size_t>(cause)]) {
      std::rethrow_exception(errors[static_cast<std::size_t>(cause)]);
    }
    for (std::size_t r = 0; r < n; ++r) {
      if (errors[r] && !released[r]) std::rethrow_exception(errors[r]);
    }
    for (std::size_t r = 0; r < n; ++r) {
      if (errors[r]) std::rethrow_exception(errors[r]);
    }
  }

 private:
  // After the run (failed ones too: they are the interesting ones). A trace that cannot be written
  // is a warning, not a reason to lose the run's own outcome.
  void write_trace(const std::string& path) const {
    std::ofstream file(path);
    if (file) world_->trace()->write_chrome_json(file, chorus::detail::concat("chorus host team of ", size_, " ranks"));
    file.close();
    if (!file) log(LogLevel::warn, "chorus::host::Team::run: cannot write the step trace (CHORUS_TRACE) to '", path, "'");
  }

  static int checked_size(int size) {
    if (size < 1 || size > kMaxSize) {
      throw Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::host::Team: size must be 1 to ",
                                                                      kMaxSize, ", got ", size));
    }
    return size;
  }

  void refuse_if_running(const char* what) const {
    if (running_ && running_->load()) {
      throw Error(ErrorCode::invalid_argument,
                  chorus::detail::concat("chorus::host::Team: cannot ", what, " a team while it is running"));
    }
  }

  int size_;
  std::unique_ptr<std::atomic<bool>> running_;
  std::shared_ptr<detail::Fault> fault_;
  std::shared_ptr<detail::SharedState> world_;
  std::string trace_path_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::host
