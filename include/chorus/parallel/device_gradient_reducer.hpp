// DeviceGradientReducer: GradientReducer (gradient_reducer.hpp) for gradients in device memory and a
// communicator whose buffers are device memory (the NCCL view, cuda::RankComm, cuda::IpcComm and the CPU
// twin's communicators), arranged on streams as PyTorch DDP's reducer arranges its comm stream:
//
//   compute stream:  backward ... copy g7 ... copy g6 [ready 0] ... copy g2 [ready 1]  ... wait [done] copy back
//   comm stream:                              wait [ready 0] all_reduce b0  wait [ready 1] all_reduce b1 [done]
//
// mark_ready(t) enqueues gradient t's copy into its bucket on the compute stream (divided by the world
// size when averaging, cast to 16 bits when compressing: Device::copy_floating, a small kernel whose
// CPU twin runs the host's loop). When a bucket's last copy is enqueued, an event is recorded after it;
// buckets go strictly in bucket order: the comm stream waits on that event, then the bucket's all-reduce
// (sum) is enqueued on the communicator's stream. No host thread, no host wait: the host only enqueues.
// finish() makes the compute stream wait for the last all-reduce and enqueues the copies back into the
// gradients; finish(FinishWait::host) also waits (bounded) until they are done.
//
// Device memory: one allocation per reducer holding every bucket in its wire type, each rounded up to
// 256 bytes (device_bytes()): the gradients' size once (half of it for float32 with fp16/bf16
// compression), as DDP's buckets are. no_sync, the bucket plan, the order and the errors are the host
// reducer's. The caller keeps the communicator on its stream (comm.stream()) and does not use it while
// an iteration is in flight (between the first mark_ready and finish()).
//
// The Device is cuda::CudaDevice or cuda::TwinDevice (cuda/device/device.hpp); it is a template
// parameter, so this header needs nothing of the CUDA layer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/memory_space.hpp"
#include "../core/reduce_op.hpp"
#include "gradient_reducer.hpp"
#include "param_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

// What finish() does besides enqueueing: return at once (the compute stream orders the rest), or also
// wait on the host until the gradients hold the reduced values.
enum class FinishWait { stream, host };

template <class Comm, class Device>
class DeviceGradientReducer {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::DeviceGradientReducer needs a chorus communicator");
  static_assert(memory_space_v<Comm> == MemorySpace::device,
                "chorus::parallel::DeviceGradientReducer needs a device communicator (memory_space_v<Comm> == "
                "MemorySpace::device); GradientReducer serves host communicators");

 public:
  using Stream = typename Device::Stream;
  using Event = typename Device::Event;
  using NoSync = detail::NoSyncGuard<DeviceGradientReducer>;
  static_assert(std::is_same<std::decay_t<decltype(std::declval<const Comm&>().stream())>, Stream>::value,
                "the communicator's stream() must be the Device's Stream");

  // Collective when options.verify_shapes: every rank constructs its reducer together. `compute`: the
  // stream the gradients are produced on (backward's). options.overlap does not apply: the comm stream is
  // the overlap.
  DeviceGradientReducer(Comm& comm, Device device, std::vector<ParamView> grads, Stream compute,
                        ReducerOptions options = {})
      : comm_(comm), device_(device), grads_(std::move(grads)), compute_(compute), options_(std::move(options)) {
    plan_ = detail::plan_gradients(comm_, grads_, options_, by_data_, kCall);
    std::size_t bytes = 0;
    for (const Bucket& b : plan_.buckets) {
      wire_types_.push_back(detail::wire_type_for(b.type, options_.compression));
      offsets_.push_back(bytes);
      bytes += round_up(b.count * size_of(wire_types_.back()));
    }
    bytes_ = bytes;
    try {
      if (bytes_ > 0) memory_ = static_cast<std::byte*>(device_.allocate(bytes_, kCall, comm_.rank()));
      for (std::size_t b = 0; b < plan_.buckets.size(); ++b) ready_events_.push_back(device_.create_event(kCall, comm_.rank()));
      done_ = device_.create_event(kCall, comm_.rank());
      if (options_.verify_shapes) verify_shapes();
    } catch (...) {
      release();
      throw;
    }
    marked_.assign(grads_.size(), 0);
    reset_iteration();
  }

  // Waits (bounded) for the reducer's work on both streams before freeing its memory; if that wait fails
  // the memory is leaked rather than freed under a running kernel.
  ~DeviceGradientReducer() {
    bool idle = true;
    try {
      idle = wait_streams_idle();
    } catch (...) {
      idle = false;
    }
    if (idle) release();
  }

  DeviceGradientReducer(const DeviceGradientReducer&) = delete;
  DeviceGradientReducer& operator=(const DeviceGradientReducer&) = delete;

  const BucketPlan& plan() const { return plan_; }
  DataType wire_type(std::size_t bucket) const { return wire_types_.at(bucket); }
  // Device memory the reducer holds for its buckets.
  std::size_t device_bytes() const { return bytes_; }
  // Where bucket `b` lives in device memory (its wire type, plan().buckets[b].count elements).
  const void* bucket_data(std::size_t b) const { return memory_ + offsets_.at(b); }

  bool sync_enabled() const { return sync_; }
  void set_sync(bool sync) { sync_ = sync; }  // takes effect at the next iteration's first mark_ready
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // The gradient with registration index `tensor` is final on the compute stream (or will be, by the time
  // the stream reaches what is enqueued now).
  void mark_ready(std::size_t tensor) {
    check_usable("parallel::DeviceGradientReducer::mark_ready");
    if (tensor >= grads_.size()) {
      throw make_error(ErrorCode::invalid_argument, "parallel::DeviceGradientReducer::mark_ready", comm_.rank(),
                       "tensor index ", tensor, " is out of range (", grads_.size(), " tensors)");
    }
    if (marked_[tensor]) {
      throw make_error(ErrorCode::invalid_argument, "parallel::DeviceGradientReducer::mark_ready", comm_.rank(),
                       "tensor ", tensor, " '", grads_[tensor].name, "' was already marked ready in this iteration");
    }
    if (marked_count_ == 0) iteration_syncs_ = sync_;
    marked_[tensor] = 1;
    ++marked_count_;
    if (!iteration_syncs_) return;
    guarded([&] {
      const std::size_t b = plan_.bucket_of[tensor];
      const ParamView& g = grads_[tensor];
      device_.copy_floating(g.data, g.type, slot(tensor), wire_types_[b], g.count,
                            options_.average ? comm_.size() : 1.0, compute_, "parallel::DeviceGradientReducer::mark_ready",
                            comm_.rank());
      if (--pending_[b] > 0) return;
      device_.record(ready_events_[b], compute_, "parallel::DeviceGradientReducer::mark_ready", comm_.rank());
      ready_[b] = 1;
      launch_ready_buckets();
    });
  }
  void mark_ready(const ParamView& grad) {
    mark_ready(detail::gradient_index(grads_, by_data_, grad, "parallel::DeviceGradientReducer::mark_ready", comm_.rank()));
  }

  // Ends the iteration: every tensor must have been marked. In a synced iteration the compute stream waits
  // for the last all-reduce and the reduced gradients are copied back on it; FinishWait::host also waits
  // for that on the host (at most twice CHORUS_TIMEOUT_MS).
  void finish(FinishWait wait = FinishWait::stream) {
    check_usable("parallel::DeviceGradientReducer::finish");
    for (std::size_t i = 0; i < grads_.size(); ++i) {
      if (!marked_[i]) {
        fail(make_error(ErrorCode::invalid_argument, "parallel::DeviceGradientReducer::finish", comm_.rank(), "tensor ", i,
                        " '", grads_[i].name, "' was not marked ready in this iteration (", marked_count_, " of ",
                        grads_.size(), " were)"));
      }
    }
    if (marked_count_ > 0 && iteration_syncs_) {
      guarded([&] {
        const int rank = comm_.rank();
        device_.record(done_, comm_.stream(), "parallel::DeviceGradientReducer::finish", rank);
        device_.stream_wait(compute_, done_, "parallel::DeviceGradientReducer::finish", rank);
        for (std::size_t i = 0; i < grads_.size(); ++i) {
          const std::size_t b = plan_.bucket_of[i];
          device_.copy_floating(slot(i), wire_types_[b], grads_[i].data, grads_[i].type, grads_[i].count, 1.0, compute_,
                                "parallel::DeviceGradientReducer::finish", rank);
        }
      });
    }
    reset_iteration();
    if (wait == FinishWait::host) {
      guarded([&] {
        device_.record(done_, compute_, "parallel::DeviceGradientReducer::finish", comm_.rank());
        if (!wait_event(done_)) {
          throw make_error(ErrorCode::timeout, "parallel::DeviceGradientReducer::finish", comm_.rank(),
                           "the compute stream did not reach the end of the gradient copies within ",
                           2 * env::timeout_ms(), " ms");
        }
      });
    }
  }

 private:
  static constexpr const char* kCall = "parallel::DeviceGradientReducer";
  static std::size_t round_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

  std::byte* slot(std::size_t tensor) const {
    const std::size_t b = plan_.bucket_of[tensor];
    return memory_ + offsets_[b] + plan_.offset_of[tensor] * size_of(wire_types_[b]);
  }

  // Buckets in order, each once it is ready: the comm stream waits for its copies, then its all-reduce.
  void launch_ready_buckets() {
    while (next_ < ready_.size() && ready_[next_]) {
      const std::size_t b = next_;
      device_.stream_wait(comm_.stream(), ready_events_[b], "parallel::DeviceGradientReducer::mark_ready", comm_.rank());
      void* data = memory_ + offsets_[b];
      comm_.all_reduce(data, data, plan_.buckets[b].count, wire_types_[b], ReduceOp::sum);
      ++next_;
    }
  }

  // Every rank must hold the same tensors: the (count, type) list goes through the device communicator as
  // two all-reduces (min and max) of fixed length, so all ranks see the same disagreement and name the
  // same first tensor. One host synchronisation, at construction only.
  void verify_shapes() {
    const int rank = comm_.rank();
    std::vector<std::uint64_t> mine(1 + 2 * grads_.size());
    mine[0] = grads_.size();
    std::uint64_t most = mine[0];
    {
      DeviceWords words(device_, 1, rank);
      device_.copy(words.data, &most, sizeof most, kCall, rank);
      comm_.all_reduce(words.data, words.data, 1, DataType::uint64, ReduceOp::max);
      comm_.wait();
      device_.copy(&most, words.data, sizeof most, kCall, rank);
    }
    mine.resize(1 + 2 * static_cast<std::size_t>(most), detail::kAbsent);
    for (std::size_t i = 0; i < grads_.size(); ++i) {
      mine[1 + 2 * i] = grads_[i].count;
      mine[2 + 2 * i] = static_cast<std::uint64_t>(grads_[i].type);
    }
    std::vector<std::uint64_t> low(mine.size()), high(mine.size());
    {
      DeviceWords words(device_, 2 * mine.size(), rank);
      device_.copy(words.data, mine.data(), mine.size() * 8, kCall, rank);
      device_.copy(words.data + mine.size(), mine.data(), mine.size() * 8, kCall, rank);
      comm_.all_reduce(words.data, words.data, mine.size(), DataType::uint64, ReduceOp::min);
      comm_.all_reduce(words.data + mine.size(), words.data + mine.size(), mine.size(), DataType::uint64, ReduceOp::max);
      comm_.wait();
      device_.copy(low.data(), words.data, mine.size() * 8, kCall, rank);
      device_.copy(high.data(), words.data + mine.size(), mine.size() * 8, kCall, rank);
    }
    if (low[0] != high[0]) {
      throw make_error(ErrorCode::mismatch, kCall, rank, "the ranks hold between ", low[0], " and ", high[0],
                       " gradients (this rank ", grads_.size(), ")");
    }
    for (std::size_t i = 0; i < grads_.size(); ++i) {
      if (low[1 + 2 * i] != high[1 + 2 * i] || low[2 + 2 * i] != high[2 + 2 * i]) {
        throw make_error(ErrorCode::mismatch, kCall, rank, "tensor ", i, " '", grads_[i].name,
                         "' differs between the ranks: counts from ", low[1 + 2 * i], " to ", high[1 + 2 * i],
                         ", types from ", to_string(static_cast<DataType>(low[2 + 2 * i])), " to ",
                         to_string(static_cast<DataType>(high[2 + 2 * i])), " (this rank: ", grads_[i].count, " ",
                         to_string(grads_[i].type), ")");
      }
    }
  }

  // A few words of device memory for verify_shapes, freed on every path.
  struct DeviceWords {
    DeviceWords(const Device& device, std::size_t words, int rank)
        : device(device), data(static_cast<std::uint64_t*>(device.allocate(words * 8, kCall, rank))) {}
    ~DeviceWords() { device.free(data); }
    DeviceWords(const DeviceWords&) = delete;
    DeviceWords& operator=(const DeviceWords&) = delete;
    const Device& device;
    std::uint64_t* data;
  };

  // Polls `event` until it is reached; false after twice CHORUS_TIMEOUT_MS.
  bool wait_event(Event event) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2 * env::timeout_ms());
    auto pause = std::chrono::microseconds(10);
    while (!device_.query(event, kCall, comm_.rank())) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
    }
    return true;
  }

  bool wait_streams_idle() {
    if (done_ == Event{}) return true;
    device_.record(done_, comm_.stream(), kCall, comm_.rank());
    if (!wait_event(done_)) return false;
    device_.record(done_, compute_, kCall, comm_.rank());
    return wait_event(done_);
  }

  void release() noexcept {
    for (Event e : ready_events_) device_.destroy_event(e);
    ready_events_.clear();
    if (done_ != Event{}) device_.destroy_event(done_);
    done_ = Event{};
    device_.free(memory_);
    memory_ = nullptr;
  }

  void reset_iteration() {
    pending_.resize(plan_.buckets.size());
    ready_.assign(plan_.buckets.size(), 0);
    for (std::size_t b = 0; b < plan_.buckets.size(); ++b) pending_[b] = plan_.buckets[b].tensors.size();
    next_ = 0;
    marked_.assign(grads_.size(), 0);
    marked_count_ = 0;
  }

  // Runs fn; any exception makes the reducer unusable (the ranks' call sequences may have diverged).
  template <class Fn>
  void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      broken_ = e.what();
      throw;
    }
  }
  [[noreturn]] void fail(const Error& error) {
    broken_ = error.what();
    throw error;
  }
  void check_usable(const char* call) const {
    if (!broken_.empty()) {
      throw make_error(ErrorCode::invalid_argument, call, comm_.rank(),
                       "the gradient reducer is unusable after an earlier error: ", broken_);
    }
  }

  Comm& comm_;
  Device device_;
  std::vector<ParamView> grads_;
  Stream compute_;
  ReducerOptions options_;
  BucketPlan plan_;
  std::unordered_map<const void*, std::size_t> by_data_;
  std::vector<DataType> wire_types_;
  std::vector<std::size_t> offsets_;  // per bucket: byte offset in memory_
  std::size_t bytes_ = 0;
  std::byte* memory_ = nullptr;
  std::vector<Event> ready_events_;  // per bucket: recorded on the compute stream after its last copy
  Event done_{};                     // the comm stream's last all-reduce; the compute stream's copies back

  bool sync_ = true;
  bool iteration_syncs_ = true;
  std::vector<char> marked_;
  std::size_t marked_count_ = 0;
  std::vector<std::size_t> pending_;  // per bucket: tensors not yet marked
  std::vector<char> ready_;           // per bucket: every copy enqueued, event recorded
  std::size_t next_ = 0;              // buckets [0, next_) have their all-reduce enqueued
  std::string broken_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
