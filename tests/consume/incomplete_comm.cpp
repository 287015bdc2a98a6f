// Must NOT compile: a communicator without reduce_scatter. contract_rejects.sh checks that the
// compiler stops with check_communicator's message naming the missing member.
#include <chorus/core/communicator.hpp>

#include <cstddef>

struct NoReduceScatter {
  int rank() const;
  int size() const;
  template <class T> void all_reduce(const T*, T*, std::size_t, chorus::ReduceOp, chorus::Algorithm = {});
  template <class T> void broadcast(const T*, T*, std::size_t, int);
  template <class T> void reduce(const T*, T*, std::size_t, chorus::ReduceOp, int);
  template <class T> void all_gather(const T*, T*, std::size_t);
  template <class T> void all_to_all(const T*, T*, std::size_t);
  template <class T> void send(const T*, std::size_t, int);
  template <class T> void recv(T*, std::size_t, int);
  void barrier();
  NoReduceScatter split(int, int);
};

static_assert(chorus::check_communicator<NoReduceScatter>(), "NoReduceScatter is a communicator");
