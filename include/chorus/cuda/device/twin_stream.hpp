// Streams and events of the CPU twin device (device/twin_device.hpp), with CUDA's semantics: enqueueing
// returns at once, one worker thread per stream runs its work in order, an event marks a point in a stream
// that the host can query or another stream can wait for, and capture records work into a graph instead of
// running it. So a stream-ordering bug (two streams on one communicator, freeing memory a queued kernel
// still reads, reading a result before waiting) shows on the CPU, under the sanitizers, as it would on a GPU.
//
//   chorus::cuda::twin::Stream stream;            // a worker thread
//   stream.enqueue([] { ... });                    // runs later, after what was enqueued before
//   chorus::cuda::twin::Event done;
//   stream.record(done);                           // done is reached when the worker gets here
//   other.wait(done);                              // other's later work runs after that point
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda::twin {

// The points of one event, shared by the event and the stream work that reaches or awaits them, so that an
// event may be destroyed while a record of it is still queued (cudaEventDestroy allows it: the resources go
// when the record completes).
class EventPoints {
 public:
  // The point the next record marks (host side, at enqueue time, as cudaEventRecord captures it).
  std::uint64_t mark() {
    std::lock_guard<std::mutex> lock(mutex_);
    captured_in_ = 0;
    return ++marked_;
  }
  // A record captured into a graph (capture sequence `capture`, never 0): the event now names that
  // capture's point, which a wait in the same capture may depend on; it is marked when the graph runs.
  void captured(std::uint64_t capture) {
    std::lock_guard<std::mutex> lock(mutex_);
    captured_in_ = capture;
  }
  // The capture sequence of the latest record, 0 if that record was not captured.
  std::uint64_t captured_in() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return captured_in_;
  }
  std::uint64_t last_mark() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return marked_;
  }
  // The stream reached `point`; `failure`: the stream's first error, which the event reports from then on.
  void reach(std::uint64_t point, std::exception_ptr failure) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reached_ = std::max(reached_, point);
      if (failure && !failure_) failure_ = failure;
    }
    changed_.notify_all();
  }
  bool reached(std::uint64_t point) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reached_ >= point;
  }
  // Waits until `point` is reached; false at `deadline`.
  bool wait_reached(std::uint64_t point, std::chrono::steady_clock::time_point deadline) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_until(lock, deadline, [&] { return reached_ >= point; });
  }
  std::exception_ptr failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::uint64_t marked_ = 0;
  std::uint64_t reached_ = 0;
  std::uint64_t captured_in_ = 0;
  std::exception_ptr failure_;
};

// cudaEvent_t: each record() marks a new point; the event is reached when the stream passes its latest point.
class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  std::uint64_t mark() { return points_->mark(); }
  void captured(std::uint64_t capture) { points_->captured(capture); }
  std::uint64_t captured_in() const { return points_->captured_in(); }
  std::uint64_t last_mark() const { return points_->last_mark(); }
  void reach(std::uint64_t point, std::exception_ptr failure) { points_->reach(point, std::move(failure)); }
  bool reached(std::uint64_t point) const { return points_->reached(point); }
  bool wait_reached(std::uint64_t point, std::chrono::steady_clock::time_point deadline) const {
    return points_->wait_reached(point, deadline);
  }
  std::exception_ptr failure() const { return points_->failure(); }
  // For queued stream work, which keeps the points alive past the event.
  const std::shared_ptr<EventPoints>& points() const { return points_; }

 private:
  std::shared_ptr<EventPoints> points_ = std::make_shared<EventPoints>();
};

class Stream;

// Work recorded by capture: replayed by launching it on a stream, as a CUDA graph is. Each node makes its
// work when the graph is launched (an event record marks its event then, as a launched graph's record
// node does).
struct Graph {
  std::vector<std::function<std::function<void()>(Stream&)>> nodes;
};

class Stream {
 public:
  Stream() : worker_([this] { run(); }) {}
  // Drains: what was enqueued still runs (the work is bounded), then the worker ends.
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void enqueue(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (capturing_) {
        captured_.nodes.push_back([work = std::move(work)](Stream&) { return work; });
        return;
      }
      queue_.push_back(std::move(work));
    }
    changed_.notify_all();
  }

  // cudaEventRecord: `event` is reached when the worker passes this point. During capture the record is a
  // node of the graph: the event is marked when the graph is launched, not now, so a graph never launched
  // leaves the event as it was (as with CUDA).
  void record(Event& event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (capturing_) {
        captured_.nodes.push_back([points = event.points()](Stream& stream) { return stream.record_work(points); });
        event.captured(capture_id_);
        return;
      }
    }
    enqueue(record_work(event.points()));
  }
  // Whether cudaStreamWaitEvent would be legal now. During capture only on an event last recorded in this
  // same capture (then in-stream order already holds: nothing to add): CUDA refuses a dependency on work
  // outside the capture (cudaErrorStreamCaptureIsolation) and invalidates the capture. Outside capture not
  // on an event last recorded in a capture (cudaErrorCapturedEvent). An event recorded by another stream's
  // capture (a fork/join, legal in CUDA) is not modelled: refused here.
  bool may_wait(const Event& event) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!capturing_) return event.captured_in() == 0;
    return event.captured_in() == capture_id_ || (event.captured_in() == 0 && event.last_mark() == 0);
  }
  // cudaStreamWaitEvent: later work waits for the event's latest point at this moment (none: no wait).
  // The work it waits for is bounded, and so is this wait: a point never reached fails the stream.
  // During capture (see may_wait), a wait on this capture's own record adds nothing.
  void wait(const Event& event, std::chrono::milliseconds bound) {
    if (!may_wait(event)) {
      throw std::logic_error(capturing() ? "dependency created on uncaptured work in another stream (cudaErrorStreamCaptureIsolation)"
                                         : "operation not permitted on an event last recorded in a capturing stream (cudaErrorCapturedEvent)");
    }
    if (capturing()) return;
    const std::uint64_t point = event.last_mark();
    if (point == 0) return;
    enqueue([points = event.points(), point, bound] {
      if (!points->wait_reached(point, std::chrono::steady_clock::now() + bound)) {
        throw std::runtime_error("chorus::cuda::twin::Stream: an awaited event was not reached within the bound");
      }
      if (const std::exception_ptr failure = points->failure()) std::rethrow_exception(failure);
    });
  }

  // Stream capture: work enqueued until end_capture() is recorded into the graph, not run.
  void begin_capture() {
    static std::atomic<std::uint64_t> captures{0};
    std::lock_guard<std::mutex> lock(mutex_);
    capturing_ = true;
    capture_id_ = ++captures;
    captured_ = Graph{};
  }
  Graph end_capture() {
    std::lock_guard<std::mutex> lock(mutex_);
    capturing_ = false;
    return std::exchange(captured_, Graph{});
  }
  bool capturing() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return capturing_;
  }
  // cudaStreamGetCaptureInfo's id: unique per capture sequence in the process, 0 when not capturing.
  std::uint64_t capture_id() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return capturing_ ? capture_id_ : 0;
  }
  // Replays a captured graph on this stream.
  void launch(const Graph& graph) {
    for (const auto& node : graph.nodes) enqueue(node(*this));
  }

  // The first exception any work threw (a sticky error, as a CUDA context's); null if none.
  std::exception_ptr failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

 private:
  // Marks the event's next point now; the work reaches it when this stream runs it.
  std::function<void()> record_work(const std::shared_ptr<EventPoints>& points) {
    const std::uint64_t point = points->mark();
    return [this, points, point] { points->reach(point, failure()); };
  }

  void run() {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        work();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!failure_) failure_ = std::current_exception();
      }
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  bool capturing_ = false;
  std::uint64_t capture_id_ = 0;
  Graph captured_;
  std::exception_ptr failure_;
  std::thread worker_;  // last: starts after every member above exists
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda::twin
