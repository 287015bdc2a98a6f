// The communicator a process group runs on, behind one interface: chorus::shm::Comm (processes on one
// machine, the default) or, in a build with MPI, chorus::mpi::Comm (a job started by mpirun, across
// machines). collectives.hpp is written against this interface only, so every torch operation means
// the same on both; both run chorus's schedules through the same interpreter, so they give the same bits.
#pragma once

#include <chorus/core/algorithm.hpp>
#include <chorus/core/data_type.hpp>
#include <chorus/core/reduce_op.hpp>

#include <cstddef>
#include <type_traits>
#include <string>
#include <utility>

namespace chorus_torch {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void all_reduce(const void* send, void* recv, std::size_t count, chorus::DataType type, chorus::ReduceOp op,
                          chorus::Algorithm algorithm) = 0;
  virtual void reduce(const void* send, void* recv, std::size_t count, chorus::DataType type, chorus::ReduceOp op,
                      int root) = 0;
  virtual void broadcast(const void* send, void* recv, std::size_t count, chorus::DataType type, int root) = 0;
  virtual void all_gather(const void* send, void* recv, std::size_t count, chorus::DataType type) = 0;
  virtual void reduce_scatter(const void* send, void* recv, std::size_t count, chorus::DataType type,
                              chorus::ReduceOp op) = 0;
  virtual void all_to_all(const void* send, void* recv, std::size_t count, chorus::DataType type) = 0;
  virtual void send(const void* data, std::size_t count, chorus::DataType type, int peer) = 0;
  virtual void recv(void* data, std::size_t count, chorus::DataType type, int peer) = 0;
  virtual void barrier() = 0;
  // The bound on the next calls' waits, in ms (the worker thread sets it before each call).
  virtual void set_timeout_ms(long ms) = 0;
  // From any thread: fail the group so every rank's current and later calls throw, naming `why`.
  // False where the transport cannot (then the current call ends within its timeout).
  virtual bool interrupt(const std::string& why) = 0;
};

// A chorus communicator as a Transport. Comm has the communicator contract (core/communicator.hpp).
template <class Comm>
class TransportOf : public Transport {
 public:
  TransportOf(Comm comm, const char* name) : comm_(std::move(comm)), name_(name) {}

  const char* name() const override { return name_; }
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void all_reduce(const void* send, void* recv, std::size_t count, chorus::DataType type, chorus::ReduceOp op,
                  chorus::Algorithm algorithm) override {
    comm_.all_reduce(send, recv, count, type, op, algorithm);
  }
  void reduce(const void* send, void* recv, std::size_t count, chorus::DataType type, chorus::ReduceOp op,
              int root) override {
    comm_.reduce(send, recv, count, type, op, root);
  }
  void broadcast(const void* send, void* recv, std::size_t count, chorus::DataType type, int root) override {
    comm_.broadcast(send, recv, count, type, root);
  }
  void all_gather(const void* send, void* recv, std::size_t count, chorus::DataType type) override {
    comm_.all_gather(send, recv, count, type);
  }
  void reduce_scatter(const void* send, void* recv, std::size_t count, chorus::DataType type,
                      chorus::ReduceOp op) override {
    comm_.reduce_scatter(send, recv, count, type, op);
  }
  void all_to_all(const void* send, void* recv, std::size_t count, chorus::DataType type) override {
    comm_.all_to_all(send, recv, count, type);
  }
  void send(const void* data, std::size_t count, chorus::DataType type, int peer) override {
    comm_.send(data, count, type, peer);
  }
  void recv(void* data, std::size_t count, chorus::DataType type, int peer) override {
    comm_.recv(data, count, type, peer);
  }
  void barrier() override { comm_.barrier(); }
  void set_timeout_ms(long ms) override {
    if constexpr (has_timeout) comm_.set_timeout_ms(ms);
  }
  bool interrupt(const std::string& why) override {
    if constexpr (has_timeout) {
      comm_.interrupt(why);
      return true;
    }
    return false;
  }

 private:
  // shm::Comm has a per-communicator timeout and a thread-safe interrupt; mpi::Comm bounds waits by
  // CHORUS_TIMEOUT_MS (process-wide) and has neither.
  template <class C, class = void>
  struct HasTimeout : std::false_type {};
  template <class C>
  struct HasTimeout<C, std::void_t<decltype(std::declval<C&>().set_timeout_ms(1L))>> : std::true_type {};
  static constexpr bool has_timeout = HasTimeout<Comm>::value;

  Comm comm_;
  const char* name_;
};

}  // namespace chorus_torch
