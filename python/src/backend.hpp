// chorus_torch::Backend: a c10d::Backend over one chorus communicator per process group (transport.hpp). The glue only:
// checks that torch's arguments are CPU tensors of agreeing shapes (refused at the call, in the
// caller's thread, before any rank moves a byte), makes non-contiguous tensors contiguous (copied
// back after the call), queues the call on the group's worker thread (worker.hpp), or a send or
// recv on its peer's link (links.hpp), and hands back a Work whose future completes there (work.hpp).
// What each operation does on the communicator is in collectives.hpp; how reductions map is in
// reduction.hpp.
#pragma once

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <chorus/bench/names.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives.hpp"
#include "links.hpp"
#include "reduction.hpp"
#include "transport.hpp"
#include "work.hpp"
#include "worker.hpp"

namespace chorus_torch {

using WorkPtr = c10::intrusive_ptr<c10d::Work>;

class Backend final : public c10d::Backend {
 public:
  // `transport`: the group's communicator, already built (transports.hpp); `links`: makes point-to-point
  // links (empty: send and recv run on the group's worker, in its order).
  Backend(std::unique_ptr<Transport> transport, int rank, int size, std::chrono::milliseconds timeout,
          LinkFactory links = {})
      : c10d::Backend(rank, size), timeout_(timeout), comm_(std::move(transport)), make_link_(std::move(links)) {
    if (const char* name = std::getenv("CHORUS_TORCH_ALGORITHM"); name != nullptr && *name != '\0') {
      try {
        algorithm_ = chorus::bench::parse_algorithm(name);
      } catch (const chorus::Error& e) {
        std::rethrow_exception(backend_error(std::string("chorus: CHORUS_TORCH_ALGORITHM: ") + e.what()));
      }
    }
  }
  ~Backend() override { shutdown(); }

  const std::string getBackendName() const override { return "chorus"; }
  // "shm" or "mpi" (transport.hpp); empty once shut down.
  std::string transport() const { return comm_ ? comm_->name() : ""; }
  bool supportsCoalescing() const override { return true; }
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }

  c10d::ErrorType getError() override { return static_cast<c10d::ErrorType>(error_type_.load()); }

  // Releases every rank of the group at once (they get peer_failed naming this rank), and the peers
  // of every link; calls already queued here fail fast.
  void abort() override {
    std::lock_guard<std::mutex> lock(lifetime_);
    if (closed_) return;
    const std::string why = "torch.distributed aborted the process group on this rank";
    comm_->interrupt(why);
    for (auto& entry : links_) entry.second->interrupt(why);
    if (make_link_) make_link_.announce_abort(why);
    for (auto& entry : links_) entry.second->stop();
    worker_.stop();
    closed_ = true;
  }
  // Runs what is queued, then leaves the communicators (their shared memory is unmapped).
  void shutdown() override {
    std::lock_guard<std::mutex> lock(lifetime_);
    if (closed_) return;
    for (auto& entry : links_) entry.second->stop();
    links_.clear();
    worker_.stop();
    comm_.reset();
    closed_ = true;
  }

  void startCoalescing() override {
    std::lock_guard<std::mutex> lock(batch_mutex_);
    coalescing_ = true;
    batch_.clear();
  }
  WorkPtr endCoalescing() override;

  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  WorkPtr allreduce_coalesced(std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  WorkPtr allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                    const c10d::AllgatherOptions& opts) override;
  WorkPtr all_gather_single(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) override;
  WorkPtr all_gather_single_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                      const c10d::AllgatherOptions& opts) override;
  WorkPtr gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                 const c10d::GatherOptions& opts) override;
  WorkPtr scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                  const c10d::ScatterOptions& opts) override;
  WorkPtr reduce_scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                         const c10d::ReduceScatterOptions& opts) override;
  WorkPtr reduce_scatter_single(at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  WorkPtr reduce_scatter_single_coalesced(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::ReduceScatterOptions& opts) override;
  WorkPtr all_to_all_single(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                            std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) override;
  WorkPtr alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                   const c10d::AllToAllOptions& opts) override;
  WorkPtr send(std::vector<at::Tensor>& tensors, int peer, int tag) override;
  WorkPtr recv(std::vector<at::Tensor>& tensors, int peer, int tag) override;
  WorkPtr recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  WorkPtr barrier(const c10d::BarrierOptions& opts) override;

 private:
  // A call as the worker runs it: `body` uses the communicator; the job completes `work`.
  using Body = std::function<void(Comm&)>;
  // A send or recv: `body` moves the message to or from `peer`, the peer's rank in `comm`.
  using PeerBody = std::function<void(Comm& comm, int peer)>;
  struct Queued {
    Worker::Job job;
    c10::intrusive_ptr<Work> work;
    int peer = -1;         // send/recv: the peer; -1 for a collective
    bool sends = false;
    Link* link = nullptr;  // send/recv with links: where the job runs
  };

  static long clamp_timeout(std::chrono::milliseconds timeout) {
    return std::clamp<long>(static_cast<long>(timeout.count()), 1L, chorus::env::kMaxTimeoutMs);
  }

  WorkPtr submit(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                 std::chrono::milliseconds timeout, bool async, Body body);
  WorkPtr submit_p2p(c10d::OpType type, const char* title, std::vector<at::Tensor> tensors, int peer, bool sends,
                     PeerBody body);
  // Runs `fn` and completes `work` with its error (a chorus::Error's text after `context`); never throws.
  template <class Fn>
  void run_and_complete(Work& work, const std::string& context, Fn&& fn);
  Link& link(int peer, bool sends);  // under lifetime_
  WorkPtr end_linked_batch(c10::intrusive_ptr<Work> work, std::vector<Queued> batch);
  void note_failure(const chorus::Error& e);
  static Body in_order(std::vector<Body> bodies);
  Body all_gather_body(const char* call, const at::Tensor& output, const at::Tensor& input) const;
  Body reduce_scatter_body(const char* call, const at::Tensor& output, const at::Tensor& input,
                           const c10d::ReduceOp& op) const;

  std::atomic<std::chrono::milliseconds> timeout_;
  chorus::Algorithm algorithm_ = chorus::Algorithm::automatic;
  std::unique_ptr<Transport> comm_;
  std::atomic<int> error_type_{static_cast<int>(c10d::ErrorType::SUCCESS)};
  std::mutex batch_mutex_;
  bool coalescing_ = false;
  std::vector<Queued> batch_;
  LinkFactory make_link_;
  std::mutex lifetime_;  // closed_, links_
  bool closed_ = false;
  std::map<std::pair<int, bool>, std::unique_ptr<Link>> links_;  // by (peer, sends)
  Worker worker_;  // last: its thread stops before the communicator goes
};

}  // namespace chorus_torch

#include "backend_calls.hpp"
