// Checks written once against the communicator contract (core/communicator.hpp) and run on every
// communicator: host::Comm, the mailbox fake, and later MPI and GPU backends. Each rank runs
// generic_checks(comm) and gets back the failures it saw as text (Catch2 assertions are not
// thread-safe, so the main thread asserts on what every rank returns). Results are read, and buffers
// released, only after comm.wait(): the contract's one completion rule (a no-op where calls complete on
// return; on a device communicator, until the work enqueued so far has run).
#pragma once

#include <chorus/core/collective.hpp>
#include <chorus/core/communicator.hpp>
#include <chorus/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace generic {

// Small integers: sums over up to 16 ranks stay exact in float and int32, in any order.
inline std::int32_t value(int rank, std::size_t i) { return static_cast<std::int32_t>((rank * 7 + i * 3) % 5) - 2; }

template <class T>
std::vector<T> values(int rank, std::size_t count, std::size_t offset = 0) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<T>(value(rank, offset + i));
  return v;
}

template <class T>
T sum_over_ranks(int ranks, std::size_t i) {
  T sum = 0;
  for (int r = 0; r < ranks; ++r) sum += static_cast<T>(value(r, i));
  return sum;
}

class Failures {
 public:
  template <class T>
  void expect(const std::string& what, const std::vector<T>& got, const std::vector<T>& want) {
    if (got != want) failures_.push_back(what);
  }
  void fail(const std::string& what) { failures_.push_back(what); }
  std::vector<std::string> take() { return std::move(failures_); }

 private:
  std::vector<std::string> failures_;
};

inline std::string where(const char* call, const char* form, std::size_t count, bool in_place, int rank) {
  return chorus::detail::concat(call, " (", form, ", count ", count, in_place ? ", in place" : "", ") on rank ", rank);
}

// Every collective, typed (float) and type-erased (int32), in and out of place, awkward counts.
// `forced`: the algorithm the type-erased all_reduce forces (automatic for a communicator, such as
// mpi::NativeComm, that cannot force one).
template <class Comm>
std::vector<std::string> generic_checks(Comm& comm, chorus::Algorithm forced = chorus::Algorithm::ring) {
  static_assert(chorus::is_communicator_v<Comm>, "generic checks run on chorus communicators only");
  Failures f;
  const int n = comm.size();
  const int r = comm.rank();
  const auto un = static_cast<std::size_t>(n);
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, un + 1, std::size_t{1000}}) {
    for (bool in_place : {false, true}) {
      // all_reduce, typed.
      {
        std::vector<float> in = values<float>(r, count), out(count, -99.0f), want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = sum_over_ranks<float>(n, i);
        float* recv = in_place ? in.data() : out.data();
        comm.all_reduce(in.data(), recv, count, chorus::ReduceOp::sum);
        comm.wait();
        f.expect(where("all_reduce", "typed", count, in_place, r), in_place ? in : out, want);
      }
      // all_reduce, type-erased, with a forced algorithm.
      {
        std::vector<std::int32_t> in = values<std::int32_t>(r, count), out(count, -99), want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = sum_over_ranks<std::int32_t>(n, i);
        void* recv = in_place ? static_cast<void*>(in.data()) : static_cast<void*>(out.data());
        comm.all_reduce(static_cast<const void*>(in.data()), recv, count, chorus::DataType::int32,
                        chorus::ReduceOp::sum, forced);
        comm.wait();
        f.expect(where("all_reduce", "erased", count, in_place, r), in_place ? in : out, want);
      }
      // reduce_scatter: recv == send + rank*count in place.
      {
        std::vector<float> in = values<float>(r, count * un), out(count, -99.0f), want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = sum_over_ranks<float>(n, static_cast<std::size_t>(r) * count + i);
        float* recv = in_place ? in.data() + static_cast<std::size_t>(r) * count : out.data();
        comm.reduce_scatter(in.data(), recv, count, chorus::ReduceOp::sum);
        comm.wait();
        f.expect(where("reduce_scatter", "typed", count, in_place, r), std::vector<float>(recv, recv + count), want);
      }
      // all_gather (erased): send == recv + rank*count in place.
      {
        std::vector<std::int32_t> gathered(count * un, -99), want(count * un);
        for (int p = 0; p < n; ++p) {
          for (std::size_t i = 0; i < count; ++i) want[static_cast<std::size_t>(p) * count + i] = value(p, i);
        }
        std::vector<std::int32_t> own = values<std::int32_t>(r, count);
        std::int32_t* send = own.data();
        if (in_place) {
          std::copy(own.begin(), own.end(), gathered.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count));
          send = gathered.data() + static_cast<std::size_t>(r) * count;
        }
        comm.all_gather(static_cast<const void*>(send), static_cast<void*>(gathered.data()), count,
                        chorus::DataType::int32);
        comm.wait();
        f.expect(where("all_gather", "erased", count, in_place, r), gathered, want);
      }
      // broadcast and reduce from the last rank.
      {
        const int root = n - 1;
        std::vector<float> data = r == root ? values<float>(root, count) : std::vector<float>(count, -99.0f);
        std::vector<float> out(count, -99.0f);
        comm.broadcast(data.data(), in_place ? data.data() : out.data(), count, root);
        comm.wait();
        f.expect(where("broadcast", "typed", count, in_place, r), in_place ? data : out, values<float>(root, count));

        std::vector<float> in = values<float>(r, count), got(count, -99.0f), want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = sum_over_ranks<float>(n, i);
        comm.reduce(in.data(), in_place ? in.data() : got.data(), count, chorus::ReduceOp::sum, root);
        comm.wait();
        if (r == root) f.expect(where("reduce", "typed", count, in_place, r), in_place ? in : got, want);
      }
      // all_to_all: block p of rank r's output is block r of rank p's input.
      {
        std::vector<float> in = values<float>(r, count * un), out(count * un, -99.0f), want(count * un);
        for (int p = 0; p < n; ++p) {
          const std::vector<float> theirs = values<float>(p, count, static_cast<std::size_t>(r) * count);
          std::copy(theirs.begin(), theirs.end(), want.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(p) * count));
        }
        float* recv = in_place ? in.data() : out.data();
        comm.all_to_all(in.data(), recv, count);
        comm.wait();
        f.expect(where("all_to_all", "typed", count, in_place, r), in_place ? in : out, want);
      }
    }
  }
  // send/recv around a ring, typed and erased.
  if (n > 1) {
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<double> mine(5, r), theirs(5, -1);
    std::vector<std::int32_t> erased(3, -1);
    if (r % 2 == 0) {
      comm.send(mine.data(), mine.size(), next);
      comm.recv(theirs.data(), theirs.size(), prev);
    } else {
      comm.recv(theirs.data(), theirs.size(), prev);
      comm.send(mine.data(), mine.size(), next);
    }
    comm.wait();
    f.expect(where("send/recv", "typed", 5, false, r), theirs, std::vector<double>(5, prev));
    if (r == 0) {
      const std::vector<std::int32_t> payload = {7, 8, 9};
      comm.send(static_cast<const void*>(payload.data()), payload.size(), chorus::DataType::int32, n - 1);
      comm.wait();  // payload is read when the transfer runs: keep it until then
    } else if (r == n - 1) {
      comm.recv(static_cast<void*>(erased.data()), erased.size(), chorus::DataType::int32, 0);
      comm.wait();
      f.expect(where("send/recv", "erased", 3, false, r), erased, std::vector<std::int32_t>{7, 8, 9});
    }
  }
  comm.barrier();
  // split into even and odd ranks, reversed by key: the new communicator works like any other.
  Comm half = comm.split(r % 2, -r);
  const int members = (n - r % 2 + 1) / 2;
  if (half.size() != members) f.fail(chorus::detail::concat("split gave size ", half.size(), " on rank ", r));
  std::vector<std::int32_t> one = {1, r};
  half.all_reduce(one.data(), one.data(), 2, chorus::ReduceOp::sum);
  half.wait();
  std::int32_t rank_sum = 0;
  for (int p = r % 2; p < n; p += 2) rank_sum += p;
  f.expect(where("all_reduce after split", "typed", 2, true, r), one, std::vector<std::int32_t>{members, rank_sum});
  const int expected_rank = (members - 1) - r / 2;  // key -r: the highest parent rank comes first
  if (half.rank() != expected_rank) {
    f.fail(chorus::detail::concat("split gave rank ", half.rank(), " to rank ", r, ", expected ", expected_rank));
  }
  return f.take();
}

}  // namespace generic
