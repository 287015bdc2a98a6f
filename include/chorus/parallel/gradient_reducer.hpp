// GradientReducer: data parallelism's gradient all-reduce, bucketed and overlapped with backward as
// PyTorch DDP's Reducer does it (docs/data-parallel.md).
//
// Per iteration the caller's backward calls mark_ready(tensor) once for every gradient as it is
// produced; the gradient is copied into its bucket (divided by the world size when averaging, and
// cast to 16 bits when compressing). A bucket whose tensors are all marked is ready, and buckets
// are all-reduced (sum) strictly in bucket order, so every rank issues the same sequence of calls
// even if its gradients finish in another order. finish() waits for the last bucket (bounded) and
// writes the reduced gradients back into the caller's tensors.
//
// Threads: with options.overlap (the default) the reducer owns one communication thread that makes
// the all-reduces while the caller keeps computing. Between the first mark_ready of an iteration and
// the return of finish(), only that thread calls the communicator: the caller must not use the same
// Comm then (before the first mark_ready and after finish() it may, e.g. to all-reduce the loss).
// A backend that allows calls from one thread only (MPI below MPI_THREAD_SERIALIZED) needs
// overlap = false, where each ready bucket is all-reduced inside the mark_ready that completed it.
// An error on the communication thread is rethrown by finish(); after any error other than a bad
// mark_ready argument the reducer refuses further use. The destructor stops and joins the thread.
//
// no_sync (gradient accumulation): an iteration whose first mark_ready happens while sync is off
// communicates nothing; the caller keeps accumulating into its gradient tensors, and the next synced
// iteration all-reduces the accumulated sums, one all-reduce per bucket per optimizer step.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/env.hpp"
#include "../core/error.hpp"
#include "../core/reduce_op.hpp"
#include "broadcast_parameters.hpp"
#include "bucket_plan.hpp"
#include "../core/floating_copy.hpp"
#include "param_view.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

// PyTorch's fp16_compress_hook / bf16_compress_hook: float32 and float64 buckets travel as 16 bits.
enum class GradientCompression { none, fp16, bf16 };

struct ReducerOptions {
  BucketOptions buckets;
  std::vector<std::size_t> ready_order;  // expected ready order (registration indices); empty: reverse
  bool average = true;                   // divide by the world size (DDP's default)
  GradientCompression compression = GradientCompression::none;
  bool overlap = true;         // all-reduce on the reducer's thread; false: inside mark_ready
  bool verify_shapes = true;   // collective check at construction that every rank has the same tensors
};

namespace detail {

// The type a bucket of `grad` elements travels as.
inline DataType wire_type_for(DataType grad, GradientCompression compression) {
  const bool wide = grad == DataType::float32 || grad == DataType::float64;
  if (wide && compression == GradientCompression::fp16) return DataType::float16;
  if (wide && compression == GradientCompression::bf16) return DataType::bfloat16;
  return grad;
}

// Checks the gradients (floating point, no two sharing data), indexes them by data pointer into `by_data`
// and plans their buckets: what the host and the device reducers both do at construction.
template <class Comm>
BucketPlan plan_gradients(const Comm& comm, const std::vector<ParamView>& grads, const ReducerOptions& options,
                          std::unordered_map<const void*, std::size_t>& by_data, const char* call) {
  check_not_empty(comm, call);
  check_views(comm, grads, call);
  std::vector<TensorSpec> specs;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const ParamView& g = grads[i];
    if (!is_floating(g.type)) {
      throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "tensor ", i, " '", g.name, "' is ",
                       to_string(g.type), "; gradients must be floating point");
    }
    if (g.data != nullptr && g.count > 0 && !by_data.emplace(g.data, i).second) {
      throw make_error(ErrorCode::invalid_argument, call, comm.rank(), "tensors ", by_data[g.data], " and ", i,
                       " share their data");
    }
    specs.push_back(TensorSpec{g.type, g.count});
  }
  return plan_buckets(specs, options.buckets, options.ready_order);
}

// The registration index of `grad`: by its data pointer, or by name for an empty tensor.
inline std::size_t gradient_index(const std::vector<ParamView>& grads,
                                  const std::unordered_map<const void*, std::size_t>& by_data, const ParamView& grad,
                                  const char* call, int rank) {
  if (grad.data != nullptr) {
    auto found = by_data.find(grad.data);
    if (found != by_data.end()) return found->second;
  }
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].count == 0 && grad.count == 0 && grads[i].name == grad.name) return i;
  }
  throw make_error(ErrorCode::invalid_argument, call, rank, "tensor '", grad.name, "' is not one of the reducer's ",
                   grads.size(), " gradients");
}

// Turns a reducer's sync off for its lifetime (PyTorch's `with ddp.no_sync():`), then restores it.
template <class Reducer>
class NoSyncGuard {
 public:
  explicit NoSyncGuard(Reducer& reducer) : reducer_(reducer), was_(reducer.sync_enabled()) { reducer_.set_sync(false); }
  ~NoSyncGuard() { reducer_.set_sync(was_); }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;

 private:
  Reducer& reducer_;
  bool was_;
};

}  // namespace detail

template <class Comm>
class GradientReducer {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::GradientReducer needs a chorus communicator");
  static_assert(require_host_memory<Comm>());  // its buckets are host vectors, filled and read by the CPU

 public:
  using NoSync = detail::NoSyncGuard<GradientReducer>;

  // Collective when options.verify_shapes: every rank constructs its reducer together.
  GradientReducer(Comm& comm, std::vector<ParamView> grads, ReducerOptions options = {})
      : comm_(comm), grads_(std::move(grads)), options_(std::move(options)) {
    plan_ = detail::plan_gradients(comm_, grads_, options_, by_data_, "parallel::GradientReducer");
    if (options_.verify_shapes) verify_parameter_shapes(comm_, grads_);
    for (const Bucket& b : plan_.buckets) {
      wire_types_.push_back(detail::wire_type_for(b.type, options_.compression));
      buffers_.emplace_back(b.count * size_of(wire_types_.back()));
    }
    marked_.assign(grads_.size(), 0);
    ready_.assign(plan_.buckets.size(), 0);
    reset_iteration();
    if (options_.overlap) communicator_ = std::thread([this] { communicate(); });
  }

  ~GradientReducer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    if (communicator_.joinable()) communicator_.join();
  }

  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  const BucketPlan& plan() const { return plan_; }
  DataType wire_type(std::size_t bucket) const { return wire_types_.at(bucket); }

  bool sync_enabled() const { return sync_; }
  void set_sync(bool sync) { sync_ = sync; }  // takes effect at the next iteration's first mark_ready
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // The gradient with registration index `tensor` is final for this iteration.
  void mark_ready(std::size_t tensor) {
    check_usable("mark_ready");
    if (tensor >= grads_.size()) {
      throw make_error(ErrorCode::invalid_argument, "parallel::GradientReducer::mark_ready", comm_.rank(),
                       "tensor index ", tensor, " is out of range (", grads_.size(), " tensors)");
    }
    if (marked_[tensor]) {
      throw make_error(ErrorCode::invalid_argument, "parallel::GradientReducer::mark_ready", comm_.rank(), "tensor ",
                       tensor, " '", grads_[tensor].name, "' was already marked ready in this iteration");
    }
    if (marked_count_ == 0) iteration_syncs_ = sync_;
    marked_[tensor] = 1;
    ++marked_count_;
    if (!iteration_syncs_) return;

    const std::size_t b = plan_.bucket_of[tensor];
    const ParamView& g = grads_[tensor];
    std::byte* slot = buffers_[b].data() + plan_.offset_of[tensor] * size_of(wire_types_[b]);
    copy_floating(g.data, g.type, slot, wire_types_[b], g.count, options_.average ? comm_.size() : 1.0);
    if (--pending_[b] > 0) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_[b] = 1;
    }
    if (options_.overlap) {
      work_.notify_all();
    } else {
      launch_ready_buckets_here();
    }
  }

  // The same, found by the view's data pointer (or its name, for an empty tensor).
  void mark_ready(const ParamView& grad) { mark_ready(index_of(grad)); }

  // Ends the iteration: every tensor must have been marked. In a synced iteration, waits for every
  // bucket's all-reduce (at most twice CHORUS_TIMEOUT_MS, so a backend's own timeout reports first)
  // and writes the reduced gradients into the caller's tensors.
  void finish() {
    check_usable("finish");
    for (std::size_t i = 0; i < grads_.size(); ++i) {
      if (!marked_[i]) {
        fail(make_error(ErrorCode::invalid_argument, "parallel::GradientReducer::finish", comm_.rank(), "tensor ", i,
                        " '", grads_[i].name, "' was not marked ready in this iteration (", marked_count_, " of ",
                        grads_.size(), " were)"));
      }
    }
    if (marked_count_ > 0 && iteration_syncs_) {
      wait_for_buckets();
      for (std::size_t i = 0; i < grads_.size(); ++i) {
        const std::size_t b = plan_.bucket_of[i];
        const std::byte* slot = buffers_[b].data() + plan_.offset_of[i] * size_of(wire_types_[b]);
        copy_floating(slot, wire_types_[b], grads_[i].data, grads_[i].type, grads_[i].count);
      }
    }
    reset_iteration();
  }

 private:
  std::size_t index_of(const ParamView& grad) const {
    return detail::gradient_index(grads_, by_data_, grad, "parallel::GradientReducer::mark_ready", comm_.rank());
  }

  void reduce_bucket(std::size_t b) {
    void* data = buffers_[b].data();
    comm_.all_reduce(data, data, plan_.buckets[b].count, wire_types_[b], ReduceOp::sum);
  }

  // The communication thread: all-reduce bucket next_ once it is ready, in order. Stopped, it still
  // reduces the buckets already ready, so every rank makes the same calls whenever it is destroyed.
  void communicate() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || next_is_ready(); });
      if (!next_is_ready()) return;
      const std::size_t b = next_;
      lock.unlock();
      std::exception_ptr failure;
      try {
        reduce_bucket(b);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure) {
        thread_error_ = failure;
        done_.notify_all();
        return;
      }
      ++next_;
      done_.notify_all();
    }
  }

  bool next_is_ready() const { return next_ < ready_.size() && ready_[next_]; }

  // overlap = false: the caller's thread makes the calls, still in bucket order.
  void launch_ready_buckets_here() {
    while (next_is_ready()) {
      try {
        reduce_bucket(next_);
      } catch (...) {
        fail(std::current_exception());
      }
      ++next_;
    }
  }

  void wait_for_buckets() {
    const auto limit = std::chrono::milliseconds(2 * env::timeout_ms());
    std::unique_lock<std::mutex> lock(mutex_);
    const bool finished = done_.wait_for(lock, limit, [&] { return thread_error_ || next_ == ready_.size(); });
    if (thread_error_) {
      std::exception_ptr failure = thread_error_;
      lock.unlock();
      fail(failure);
    }
    if (!finished) {
      const std::size_t stuck = next_;
      lock.unlock();
      fail(make_error(ErrorCode::timeout, "parallel::GradientReducer::finish", comm_.rank(), "bucket ", stuck, " of ",
                      ready_.size(), " was not all-reduced within ", limit.count(), " ms"));
    }
  }

  void reset_iteration() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t b = 0; b < plan_.buckets.size(); ++b) {
      pending_.resize(plan_.buckets.size());
      pending_[b] = plan_.buckets[b].tensors.size();
      ready_[b] = 0;
    }
    next_ = 0;
    marked_.assign(grads_.size(), 0);
    marked_count_ = 0;
  }

  // Records why the reducer can no longer be used, then throws.
  [[noreturn]] void fail(std::exception_ptr failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const Error& e) {
      broken_ = e.what();
      throw;
    } catch (const std::exception& e) {
      broken_ = e.what();
      throw;
    } catch (...) {
      broken_ = "an unknown exception";
      throw;
    }
  }
  [[noreturn]] void fail(const Error& error) { fail(std::make_exception_ptr(error)); }

  void check_usable(const char* call) const {
    if (!broken_.empty()) {
      throw make_error(ErrorCode::invalid_argument, call, comm_.rank(),
                       "the gradient reducer is unusable after an earlier error: ", broken_);
    }
  }

  Comm& comm_;
  std::vector<ParamView> grads_;
  ReducerOptions options_;
  BucketPlan plan_;
  std::unordered_map<const void*, std::size_t> by_data_;
  std::vector<DataType> wire_types_;
  std::vector<std::vector<std::byte>> buffers_;  // one per bucket, in the wire type

  // The caller's thread only.
  bool sync_ = true;
  bool iteration_syncs_ = true;
  std::vector<char> marked_;
  std::size_t marked_count_ = 0;
  std::vector<std::size_t> pending_;  // per bucket: tensors not yet marked
  std::string broken_;

  // Shared with the communication thread, under mutex_.
  std::mutex mutex_;
  std::condition_variable work_;  // a bucket became ready, or stop
  std::condition_variable done_;  // a bucket was reduced, or failed
  std::vector<char> ready_;
  std::size_t next_ = 0;  // buckets [0, next_) are reduced
  bool stop_ = false;
  std::exception_ptr thread_error_;
  std::thread communicator_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
