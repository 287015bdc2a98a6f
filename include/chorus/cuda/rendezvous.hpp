// Where per-rank calls on a team meet. cuda::Team and its CPU twin run ONE launch for all ranks, so a
// per-rank view (team_comm.hpp) cannot launch on its own: each rank deposits its part of a call here,
// and when the last rank's part arrives the parts are compared (runtime::first_difference, the host
// backend's wording: ranks that disagree get chorus::Error(mismatch), every one of them, and nothing is
// launched) and the team call runs once with every rank's buffers. send and recv meet the same way, a's
// i-th send to b with b's i-th recv from a.
//
// Two ways to call, as NCCL allows one thread per device or one thread for several:
//   - one thread per rank: the call returns once the team call has run (been enqueued, on a GPU), or
//     throws; the wait for the other ranks is bounded by CHORUS_TIMEOUT_MS, and a timeout fails every
//     rank's part of the call with chorus::Error(timeout) naming the ranks that never arrived;
//   - one thread for all ranks: calls inside a Group (group.hpp) only deposit and return; the group's
//     end settles them in the order they were made (consecutive send/recv pairs run as one transfer)
//     and throws the first failure.
// Team calls are serialized per rendezvous (one per team): the twin's Team::run and a GPU team's launch
// state are not re-entrant. Plain C++: the streams are opaque pointers here.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../core/algorithm.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../runtime/call_descriptor.hpp"
#include "kernel/all_reduce_call.hpp"
#include "group.hpp"
#include "transfer.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// One rank's part of a team call (a collective, barrier or split), as checked on its rank.
struct RankCall {
  runtime::CallDescriptor described;  // compared between ranks (split's colour and key ride along)
  Algorithm algorithm = Algorithm::automatic;
  kernel::KernelAlgorithm kernel = kernel::KernelAlgorithm::one_shot;  // what kernel_for chose for it
  // Runs every rank's part of a collective (by rank) on the team's adapter. Set by the calling rank for the
  // call's element type, so a program compiles the kernels of only the types it calls (team_comm.hpp).
  void (*run)(void* adapter, const std::vector<RankCall>& calls) = nullptr;
  const void* send = nullptr;
  void* recv = nullptr;
  void* stream = nullptr;  // opaque: a cudaStream_t on the GPU, null on the twin
};

// A matched send/recv pair: `count` elements of `type` from `send` on rank `from` to `recv` on `to`.
struct PeerTransfer {
  int from = 0;
  int to = 0;
  DataType type = DataType::uint8;
  std::size_t count = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  void* send_stream = nullptr;
  void* recv_stream = nullptr;
};

// Matched pairs as Team::transfer takes them: bytes, since a transfer only copies.
inline std::vector<Transfer<std::uint8_t>> as_bytes(const std::vector<PeerTransfer>& transfers) {
  std::vector<Transfer<std::uint8_t>> bytes;
  for (const PeerTransfer& t : transfers) {
    bytes.push_back({t.from, t.to, static_cast<const std::uint8_t*>(t.send), static_cast<std::uint8_t*>(t.recv), t.count * size_of(t.type)});
  }
  return bytes;
}

namespace rendezvous_detail {

// One team call or one send/recv pair, from the first arrival until every rank has collected its outcome.
struct Job {
  enum class State { collecting, running, done };
  bool peer = false;  // a send/recv pair, else a team call
  std::uint64_t sequence = 0;
  int expected = 0;
  int arrived = 0;
  int collected = 0;
  State state = State::collecting;
  std::vector<RankCall> calls;  // team calls: by rank
  std::vector<bool> present;
  std::vector<std::string> abandoned;  // team calls: by rank, why its part failed its own checks (empty: it did not)
  bool has_send = false, has_recv = false;  // pairs: which sides arrived
  PeerTransfer transfer;
  DataType recv_type = DataType::uint8;
  std::size_t recv_count = 0;
  std::vector<Failure> failures;               // by rank: what that rank's call throws
  std::vector<std::shared_ptr<void>> results;  // by rank: what a call returns (split's new communicator)

  bool complete() const { return arrived == expected; }
};

}  // namespace rendezvous_detail

class Rendezvous : public GroupMember, public std::enable_shared_from_this<Rendezvous> {
 public:
  // Runs one team call with every rank's part (they agree); fills results by rank where the call returns one.
  using RunCall = std::function<void(const std::vector<RankCall>&, std::vector<std::shared_ptr<void>>&)>;
  // Runs matched send/recv pairs together.
  using RunTransfers = std::function<void(const std::vector<PeerTransfer>&)>;

  Rendezvous(int ranks, RunCall run_call, RunTransfers run_transfers)
      : ranks_(ranks), next_(static_cast<std::size_t>(ranks), 0), run_call_(std::move(run_call)),
        run_transfers_(std::move(run_transfers)) {}

  int size() const { return ranks_; }

  // `rank`'s part of a team call. Outside a group: returns `rank`'s result once the call has run, or
  // throws its failure. Inside one: returns null at once (the group's end settles it).
  std::shared_ptr<void> call(int rank, const RankCall& part) {
    std::shared_ptr<rendezvous_detail::Job> job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::shared_ptr<rendezvous_detail::Job>& slot = rounds_[next_[static_cast<std::size_t>(rank)]];
      if (!slot) slot = new_job(false, next_[static_cast<std::size_t>(rank)]);
      ++next_[static_cast<std::size_t>(rank)];
      job = slot;
      job->calls[static_cast<std::size_t>(rank)] = part;
      job->present[static_cast<std::size_t>(rank)] = true;
      ++job->arrived;
      if (job->complete() && job->state == rendezvous_detail::Job::State::collecting) check_agreement(*job);
    }
    changed_.notify_all();
    return finish(job, rank);
  }

  // `rank`'s next team call failed its own checks (the caller throws that error itself): its part is
  // marked, so the other ranks' parts of that call fail at once with peer_failed naming it instead of
  // timing out, and every rank's next call is again the same call. Returns at once; nobody collects it.
  void abandon(int rank, runtime::CallKind kind, const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const std::uint64_t sequence = next_[static_cast<std::size_t>(rank)]++;
      std::shared_ptr<rendezvous_detail::Job>& slot = rounds_[sequence];
      if (!slot) slot = new_job(false, sequence);
      const std::shared_ptr<rendezvous_detail::Job> job = slot;
      job->calls[static_cast<std::size_t>(rank)].described.kind = kind;
      job->present[static_cast<std::size_t>(rank)] = true;
      job->abandoned[static_cast<std::size_t>(rank)] = why.empty() ? "failed its own checks" : why;
      ++job->arrived;
      if (job->complete() && job->state == rendezvous_detail::Job::State::collecting) check_agreement(*job);
      if (++job->collected == job->expected) rounds_.erase(sequence);
    }
    changed_.notify_all();
  }

  // `from`'s send to `to` and `to`'s recv from `from`: the i-th of each on an ordered pair match.
  void send(int from, int to, DataType type, std::size_t count, const void* data, void* stream) {
    PeerTransfer side;
    side.from = from;
    side.to = to;
    side.type = type;
    side.count = count;
    side.send = data;
    side.send_stream = stream;
    finish(deposit_peer(true, side), from);
  }
  void recv(int to, int from, DataType type, std::size_t count, void* data, void* stream) {
    PeerTransfer side;
    side.from = from;
    side.to = to;
    side.type = type;
    side.count = count;
    side.recv = data;
    side.recv_stream = stream;
    finish(deposit_peer(false, side), to);
  }

  // Runs fn while no team call runs (a GPU view's wait() synchronizes the team's streams so).
  template <class Fn>
  void exclusive(Fn&& fn) {
    std::lock_guard<std::mutex> lock(run_mutex_);
    fn();
  }

  Failure settle(const Batch& batch) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const long timeout_ms = env::timeout_ms();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (const auto& entry : batch) {
      rendezvous_detail::Job& job = *entry.first;
      while (job.state == rendezvous_detail::Job::State::collecting && !job.complete()) {
        if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && job.state == rendezvous_detail::Job::State::collecting &&
            !job.complete()) {
          fail_missing(job, timeout_ms);
        }
      }
    }
    std::vector<std::shared_ptr<rendezvous_detail::Job>> claimed;
    for (const auto& entry : batch) {
      rendezvous_detail::Job& job = *entry.first;
      if (job.state == rendezvous_detail::Job::State::collecting && job.complete()) {
        job.state = rendezvous_detail::Job::State::running;
        claimed.push_back(entry.first);
      }
    }
    if (!claimed.empty()) {
      lock.unlock();
      run(claimed);
      lock.lock();
      for (const auto& job : claimed) job->state = rendezvous_detail::Job::State::done;
      changed_.notify_all();
    }
    // A running call ends by itself: the team's own waits are bounded.
    for (const auto& entry : batch) {
      changed_.wait(lock, [&] { return entry.first->state == rendezvous_detail::Job::State::done; });
    }
    Failure first;
    for (const auto& entry : batch) {
      rendezvous_detail::Job& job = *entry.first;
      if (!first.failed) first = job.failures[static_cast<std::size_t>(entry.second)];
      if (++job.collected == job.expected && !job.peer) rounds_.erase(job.sequence);
    }
    return first;
  }

 private:
  std::shared_ptr<rendezvous_detail::Job> new_job(bool peer, std::uint64_t sequence) const {
    auto job = std::make_shared<rendezvous_detail::Job>();
    job->peer = peer;
    job->sequence = sequence;
    job->expected = peer ? 2 : ranks_;
    job->calls.resize(peer ? 0 : static_cast<std::size_t>(ranks_));
    job->present.assign(peer ? 0 : static_cast<std::size_t>(ranks_), false);
    job->abandoned.resize(peer ? 0 : static_cast<std::size_t>(ranks_));
    job->failures.resize(static_cast<std::size_t>(ranks_));
    job->results.resize(static_cast<std::size_t>(ranks_));
    return job;
  }

  std::shared_ptr<void> finish(const std::shared_ptr<rendezvous_detail::Job>& job, int rank) {
    if (in_group()) {
      rendezvous_detail::GroupState::here().tickets.push_back({shared_from_this(), job, rank, job->peer});
      return nullptr;
    }
    settle({{job, rank}}).raise();
    return job->results[static_cast<std::size_t>(rank)];  // written before the job was done; nobody writes it now
  }

  // Every rank's part against rank 0's: the first difference fails every rank, before anything runs.
  void check_agreement(rendezvous_detail::Job& job) {
    for (int bad = 0; bad < ranks_; ++bad) {
      const std::string& why = job.abandoned[static_cast<std::size_t>(bad)];
      if (why.empty()) continue;
      for (int r = 0; r < ranks_; ++r) {
        job.failures[static_cast<std::size_t>(r)] = Failure::of(
            make_error(ErrorCode::peer_failed, runtime::to_string(job.calls[static_cast<std::size_t>(r)].described.kind), r,
                       "rank ", bad, "'s part of call ", job.sequence, " failed on that rank: ", why));
      }
      job.state = rendezvous_detail::Job::State::done;
      return;
    }
    const RankCall& first = job.calls[0];
    std::string difference;
    for (int r = 1; r < ranks_ && difference.empty(); ++r) {
      const RankCall& theirs = job.calls[static_cast<std::size_t>(r)];
      difference = runtime::first_difference(first.described, 0, theirs.described, r);
      if (difference.empty() && first.algorithm != theirs.algorithm) {
        difference = chorus::detail::concat("algorithm ", to_string(first.algorithm), " on rank 0, ", to_string(theirs.algorithm),
                                            " on rank ", r);
      }
    }
    if (difference.empty()) return;
    for (int r = 0; r < ranks_; ++r) {
      job.failures[static_cast<std::size_t>(r)] = Failure::of(
          make_error(ErrorCode::mismatch, runtime::to_string(job.calls[static_cast<std::size_t>(r)].described.kind), r,
                     "ranks disagree at call ", job.sequence, ": ", difference));
    }
    job.state = rendezvous_detail::Job::State::done;
  }

  std::shared_ptr<rendezvous_detail::Job> deposit_peer(bool sending, const PeerTransfer& side) {
    std::shared_ptr<rendezvous_detail::Job> job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::deque<std::shared_ptr<rendezvous_detail::Job>>& queue = pending_[{side.from, side.to}];
      // In call order: the first pair still waiting for this side.
      const auto open = std::find_if(queue.begin(), queue.end(),
                                     [&](const std::shared_ptr<rendezvous_detail::Job>& j) { return sending ? !j->has_send : !j->has_recv; });
      if (open == queue.end()) {
        queue.push_back(new_job(true, 0));
        job = queue.back();
        job->transfer.from = side.from;
        job->transfer.to = side.to;
      } else {
        job = *open;
      }
      if (sending) {
        job->has_send = true;
        job->transfer.type = side.type;
        job->transfer.count = side.count;
        job->transfer.send = side.send;
        job->transfer.send_stream = side.send_stream;
      } else {
        job->has_recv = true;
        job->recv_type = side.type;
        job->recv_count = side.count;
        job->transfer.recv = side.recv;
        job->transfer.recv_stream = side.recv_stream;
      }
      ++job->arrived;
      if (job->complete()) {
        queue.erase(std::find(queue.begin(), queue.end(), job));
        if (job->state == rendezvous_detail::Job::State::collecting) check_pair(*job);
      }
    }
    changed_.notify_all();
    return job;
  }

  void check_pair(rendezvous_detail::Job& job) {
    const PeerTransfer& t = job.transfer;
    if (t.type == job.recv_type && t.count == job.recv_count) return;
    const std::string both = chorus::detail::concat("rank ", t.from, " sends ", t.count, " ", to_string(t.type), " to rank ", t.to,
                                                    ", which receives ", job.recv_count, " ", to_string(job.recv_type), " from rank ",
                                                    t.from);
    job.failures[static_cast<std::size_t>(t.from)] = Failure::of(make_error(ErrorCode::mismatch, "send", t.from, both));
    job.failures[static_cast<std::size_t>(t.to)] = Failure::of(make_error(ErrorCode::mismatch, "recv", t.to, both));
    job.state = rendezvous_detail::Job::State::done;
  }

  // The wait ran out: every rank's part fails, naming who never came, so the ones that did are released.
  void fail_missing(rendezvous_detail::Job& job, long timeout_ms) {
    std::string missing;
    if (job.peer) {
      const PeerTransfer& t = job.transfer;
      missing = job.has_send ? chorus::detail::concat("rank ", t.to, " never called recv from rank ", t.from)
                             : chorus::detail::concat("rank ", t.from, " never called send to rank ", t.to);
    } else {
      for (int r = 0; r < ranks_; ++r) {
        if (!job.present[static_cast<std::size_t>(r)]) missing += chorus::detail::concat(missing.empty() ? "" : ", ", r);
      }
      missing = chorus::detail::concat("rank(s) ", missing, " never made call ", job.sequence, " of this communicator");
    }
    const std::string why = chorus::detail::concat(
        missing, " within ", timeout_ms,
        " ms (CHORUS_TIMEOUT_MS); one thread calling for several ranks must make the calls inside group()");
    for (int r = 0; r < ranks_; ++r) {
      const char* name = job.peer ? (r == job.transfer.from ? "send" : "recv")
                         : job.present[static_cast<std::size_t>(r)]
                             ? runtime::to_string(job.calls[static_cast<std::size_t>(r)].described.kind)
                             : "team call";
      job.failures[static_cast<std::size_t>(r)] = Failure::of(make_error(ErrorCode::timeout, name, r, why));
    }
    job.state = rendezvous_detail::Job::State::done;
    changed_.notify_all();
  }

  // Runs claimed jobs in order, one at a time per team; the send/recv pairs among them as one transfer.
  void run(const std::vector<std::shared_ptr<rendezvous_detail::Job>>& jobs) {
    std::lock_guard<std::mutex> lock(run_mutex_);
    std::vector<PeerTransfer> transfers;
    std::vector<rendezvous_detail::Job*> pairs;
    for (const auto& job : jobs) {
      if (job->peer) {
        transfers.push_back(job->transfer);
        pairs.push_back(job.get());
        continue;
      }
      try {
        run_call_(job->calls, job->results);
      } catch (...) {
        const Failure failure = Failure::current();
        for (auto& each : job->failures) each = failure;
      }
    }
    if (transfers.empty()) return;
    try {
      run_transfers_(transfers);
    } catch (...) {
      const Failure failure = Failure::current();
      for (rendezvous_detail::Job* job : pairs) {
        job->failures[static_cast<std::size_t>(job->transfer.from)] = failure;
        job->failures[static_cast<std::size_t>(job->transfer.to)] = failure;
      }
    }
  }

  const int ranks_;
  std::mutex mutex_;                  // everything below but the run functions
  std::condition_variable changed_;  // an arrival, a timeout, a job done
  std::vector<std::uint64_t> next_;  // by rank: the sequence number of its next team call
  std::map<std::uint64_t, std::shared_ptr<rendezvous_detail::Job>> rounds_;
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<rendezvous_detail::Job>>> pending_;  // (from, to): unmatched pairs
  std::mutex run_mutex_;  // one team call at a time
  RunCall run_call_;
  RunTransfers run_transfers_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
