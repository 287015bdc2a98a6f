// Shared by the CPU-twin collective tests: run one collective on the twin (every rank at once) and the
// schedule it implements on the host backend, and hand back every rank's output bytes from both.
#pragma once

#include "twin_checks.hpp"

#include <chorus/core/collective.hpp>

namespace collective_checks {

using chorus::Collective;
using namespace twin_checks;

// The (collective, kernel) pairs the twin serves, other than all_reduce.
struct Pair {
  Collective collective;
  KernelAlgorithm algorithm;
};
inline constexpr Pair kPairs[] = {{Collective::broadcast, KernelAlgorithm::one_shot},
                                  {Collective::reduce, KernelAlgorithm::one_shot},
                                  {Collective::all_gather, KernelAlgorithm::one_shot},
                                  {Collective::all_gather, KernelAlgorithm::ring},
                                  {Collective::reduce_scatter, KernelAlgorithm::one_shot},
                                  {Collective::reduce_scatter, KernelAlgorithm::ring},
                                  {Collective::all_to_all, KernelAlgorithm::one_shot},
                                  {Collective::all_to_all, KernelAlgorithm::pairwise}};

struct Call {
  Collective collective;
  KernelAlgorithm algorithm;
  std::size_t count;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  bool in_place = false;
};

// One rank's call on the host backend, with the schedule the kernel implements. reduce: the kernel folds
// rank 0..n-1 at the root, which is the host's one-shot all_reduce (its binomial and chain reduces fold in
// other orders), so the root's bits are compared with that.
template <class T>
void host_call(chorus::host::Comm& comm, const Call& c, const T* in, T* out) {
  const auto direct_or_ring = c.algorithm == KernelAlgorithm::ring ? Algorithm::ring : Algorithm::direct;
  switch (c.collective) {
    case Collective::broadcast: comm.broadcast<T>(in, out, c.count, c.root); break;
    case Collective::reduce: comm.all_reduce<T>(in, out, c.count, c.op, Algorithm::one_shot); break;
    case Collective::all_gather: comm.all_gather<T>(in, out, c.count, direct_or_ring); break;
    case Collective::reduce_scatter: comm.reduce_scatter<T>(in, out, c.count, c.op, direct_or_ring); break;
    case Collective::all_to_all: comm.all_to_all<T>(in, out, c.count); break;
    case Collective::all_reduce: comm.all_reduce<T>(in, out, c.count, c.op, schedule_of(c.algorithm)); break;
  }
}

// One call on the twin with an explicit kernel, waited for.
template <class T>
void twin_call(chorus::cuda::twin::Team& team, const Call& c, const std::vector<const T*>& in, const std::vector<T*>& out) {
  team.collective_with<T>(c.collective, in, out, c.count, c.op, c.root, c.algorithm);
  team.synchronize();
}

// Outputs of every rank, twin and host. `inputs[r]` holds send_count(collective, count, n) elements. In
// place, each rank's send and recv lie in one buffer as NCCL places them (core/collective.hpp). Ranks whose
// output the collective leaves alone (reduce's non-roots, not in place) must still hold the sentinel;
// `untouched` says whether they do.
struct Result {
  Outputs outputs;
  bool untouched = true;
};

template <class T>
Result run_collective(chorus::cuda::twin::Team& team, const std::vector<int>& ring_order,
                      const std::vector<std::vector<T>>& inputs, const Call& c) {
  const int n = team.size();
  const std::size_t sends = chorus::send_count(c.collective, c.count, n);
  const std::size_t recvs = chorus::recv_count(c.collective, c.count, n);
  std::vector<std::vector<T>> buffers(static_cast<std::size_t>(n)), separate(static_cast<std::size_t>(n));
  std::vector<const T*> in_ptr;
  std::vector<T*> out_ptr;
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const chorus::InPlaceBuffer place = chorus::in_place_buffer(c.collective, r, n, c.count);
    auto& buffer = buffers[i];
    buffer.assign(c.in_place ? place.buffer_count : sends, harness::sentinel<T>());
    const std::size_t send_at = c.in_place ? place.send_offset : 0;
    std::copy(inputs[i].begin(), inputs[i].end(), buffer.begin() + static_cast<std::ptrdiff_t>(send_at));
    separate[i].assign(recvs, harness::sentinel<T>());
    in_ptr.push_back(buffer.data() + send_at);
    out_ptr.push_back(c.in_place ? buffer.data() + place.recv_offset : separate[i].data());
  }
  twin_call<T>(team, c, in_ptr, out_ptr);
  Result result;
  const bool root_only = chorus::traits(c.collective).recv_on_root_only;
  for (int r = 0; r < n; ++r) {
    const T* got = out_ptr[static_cast<std::size_t>(r)];
    const std::vector<unsigned char> bytes = bytes_of(std::vector<T>(got, got + recvs));
    if (root_only && r != c.root) {
      if (!c.in_place && bytes != bytes_of(std::vector<T>(recvs, harness::sentinel<T>()))) result.untouched = false;
      result.outputs.twin.emplace_back();  // nothing to compare
    } else {
      result.outputs.twin.push_back(bytes);
    }
  }

  chorus::host::Team host(n);
  host.set_ring_order(ring_order);
  std::vector<std::vector<T>> host_out(static_cast<std::size_t>(n), std::vector<T>(recvs));
  harness::run(host, [&](chorus::host::Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    host_call<T>(comm, c, inputs[r].data(), host_out[r].data());
  });
  for (int r = 0; r < n; ++r) {
    const bool skip = root_only && r != c.root;
    result.outputs.host.push_back(skip ? std::vector<unsigned char>{} : bytes_of(host_out[static_cast<std::size_t>(r)]));
  }
  return result;
}

}  // namespace collective_checks
