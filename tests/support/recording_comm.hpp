// A communicator that records every call made through it (name, count, element type) and forwards
// it to an inner one, so a check can prove which collectives a layer issues and how large they are.
// It keeps the communicator contract itself, with the inner one's memory space and completion. The log is thread-safe: the gradient reducer calls
// the communicator from its communication thread while the rank's thread reads the log.
#pragma once

#include <chorus/core/communicator.hpp>
#include <chorus/core/error.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace support {

struct Call {
  std::string name;   // the member called: "all_reduce", ..., "send", "recv", "barrier", "split", "wait"
  std::size_t count;  // its element count (0 for barrier, split and wait)
  chorus::DataType type;
};

class CallLog {
 public:
  void add(const char* name, std::size_t count, chorus::DataType type) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back({name, count, type});
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.clear();
  }
  // Every call, in the order made.
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  std::vector<Call> calls(const std::string& name) const {
    std::vector<Call> matching;
    for (Call& c : calls()) {
      if (c.name == name) matching.push_back(std::move(c));
    }
    return matching;
  }
  std::size_t count(const std::string& name) const { return calls(name).size(); }
  // The summed counts of the calls named `name`: the volume each rank contributes.
  std::size_t elements(const std::string& name) const {
    std::size_t total = 0;
    for (const Call& c : calls(name)) total += c.count;
    return total;
  }
  // Calls of the six collectives (not send, recv, barrier or split).
  std::size_t collectives() const {
    std::size_t total = 0;
    for (const char* name : {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
      total += count(name);
    }
    return total;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
};

template <class Inner>
class RecordingComm {
 public:
  // Its buffers are the inner communicator's: generic code must see the same memory and completion.
  static constexpr chorus::MemorySpace memory_space = chorus::memory_space_v<Inner>;
  static constexpr bool completes_on_return = chorus::completes_on_return_v<Inner>;

  explicit RecordingComm(Inner& inner) : inner_(&inner) {}
  explicit RecordingComm(std::unique_ptr<Inner> owned) : owned_(std::move(owned)), inner_(owned_.get()) {}

  const CallLog& log() const { return *log_; }
  void reset() { log_->clear(); }
  // From now on every all_reduce throws instead of communicating (set before other threads use it).
  void fail_all_reduces() { fail_all_reduces_ = true; }

  int rank() const { return inner_->rank(); }
  int size() const { return inner_->size(); }

  template <class T>
  void all_reduce(const T* s, T* r, std::size_t c, chorus::ReduceOp op,
                  chorus::Algorithm a = chorus::Algorithm::automatic) {
    all_reduce_call(c, chorus::data_type_v<T>);
    inner_->all_reduce(s, r, c, op, a);
  }
  template <class T>
  void broadcast(const T* s, T* r, std::size_t c, int root) {
    log_->add("broadcast", c, chorus::data_type_v<T>);
    inner_->broadcast(s, r, c, root);
  }
  template <class T>
  void reduce(const T* s, T* r, std::size_t c, chorus::ReduceOp op, int root) {
    log_->add("reduce", c, chorus::data_type_v<T>);
    inner_->reduce(s, r, c, op, root);
  }
  template <class T>
  void all_gather(const T* s, T* r, std::size_t c) {
    log_->add("all_gather", c, chorus::data_type_v<T>);
    inner_->all_gather(s, r, c);
  }
  template <class T>
  void reduce_scatter(const T* s, T* r, std::size_t c, chorus::ReduceOp op) {
    log_->add("reduce_scatter", c, chorus::data_type_v<T>);
    inner_->reduce_scatter(s, r, c, op);
  }
  template <class T>
  void all_to_all(const T* s, T* r, std::size_t c) {
    log_->add("all_to_all", c, chorus::data_type_v<T>);
    inner_->all_to_all(s, r, c);
  }
  template <class T>
  void send(const T* d, std::size_t c, int peer) {
    log_->add("send", c, chorus::data_type_v<T>);
    inner_->send(d, c, peer);
  }
  template <class T>
  void recv(T* d, std::size_t c, int peer) {
    log_->add("recv", c, chorus::data_type_v<T>);
    inner_->recv(d, c, peer);
  }

  void all_reduce(const void* s, void* r, std::size_t c, chorus::DataType t, chorus::ReduceOp op,
                  chorus::Algorithm a = chorus::Algorithm::automatic) {
    all_reduce_call(c, t);
    inner_->all_reduce(s, r, c, t, op, a);
  }
  void broadcast(const void* s, void* r, std::size_t c, chorus::DataType t, int root) {
    log_->add("broadcast", c, t);
    inner_->broadcast(s, r, c, t, root);
  }
  void reduce(const void* s, void* r, std::size_t c, chorus::DataType t, chorus::ReduceOp op, int root) {
    log_->add("reduce", c, t);
    inner_->reduce(s, r, c, t, op, root);
  }
  void all_gather(const void* s, void* r, std::size_t c, chorus::DataType t) {
    log_->add("all_gather", c, t);
    inner_->all_gather(s, r, c, t);
  }
  void reduce_scatter(const void* s, void* r, std::size_t c, chorus::DataType t, chorus::ReduceOp op) {
    log_->add("reduce_scatter", c, t);
    inner_->reduce_scatter(s, r, c, t, op);
  }
  void all_to_all(const void* s, void* r, std::size_t c, chorus::DataType t) {
    log_->add("all_to_all", c, t);
    inner_->all_to_all(s, r, c, t);
  }
  void send(const void* d, std::size_t c, chorus::DataType t, int peer) {
    log_->add("send", c, t);
    inner_->send(d, c, t, peer);
  }
  void recv(void* d, std::size_t c, chorus::DataType t, int peer) {
    log_->add("recv", c, t);
    inner_->recv(d, c, t, peer);
  }
  void barrier() {
    log_->add("barrier", 0, chorus::DataType::uint8);
    inner_->barrier();
  }
  void wait() {
    log_->add("wait", 0, chorus::DataType::uint8);
    inner_->wait();
  }
  // The child owns the split-off inner communicator and starts an empty log of its own.
  RecordingComm split(int color, int key) {
    log_->add("split", 0, chorus::DataType::uint8);
    return RecordingComm(std::make_unique<Inner>(inner_->split(color, key)));
  }

 private:
  void all_reduce_call(std::size_t c, chorus::DataType t) {
    log_->add("all_reduce", c, t);
    if (fail_all_reduces_) {
      throw chorus::make_error(chorus::ErrorCode::internal, "all_reduce", rank(), "injected failure");
    }
  }

  std::unique_ptr<Inner> owned_;  // set for a communicator made by split, or handed over
  Inner* inner_;
  bool fail_all_reduces_ = false;
  std::unique_ptr<CallLog> log_ = std::make_unique<CallLog>();  // on the heap: a RecordingComm moves
};

}  // namespace support
