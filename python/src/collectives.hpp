// What each torch operation does on a chorus communicator, on tensors already checked and made
// contiguous by the backend (backend.hpp). Data movement is bytes, so every dtype moves; reductions
// follow reduction.hpp's plan. Uneven all-to-all is an even one over blocks padded to the largest
// split (agreed by a MAX all_reduce first): two calls, chorus's schedules, no new protocol.
// Rooted gather/scatter are send/recv in rank order: chorus's send is synchronous, and the root
// taking ranks in order never waits on a rank that waits on another.
#pragma once

#include <ATen/ATen.h>


#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "reduction.hpp"
#include "transport.hpp"

namespace chorus_torch {

using Comm = Transport;

inline std::size_t bytes_of(const at::Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

// Every rank's `bytes` from `send` into `recv` (n * bytes, rank order).
inline void all_gather_bytes(Comm& comm, const void* send, void* recv, std::size_t bytes) {
  comm.all_gather(send, recv, bytes, chorus::DataType::uint8);
}

// `t` (contiguous) reduced in place across the ranks, as the plan says.
inline void all_reduce_tensor(Comm& comm, at::Tensor& t, const Reduction& plan,
                              chorus::Algorithm algorithm = chorus::Algorithm::automatic) {
  const auto count = static_cast<std::size_t>(t.numel()) * static_cast<std::size_t>(plan.lanes);
  switch (plan.kind) {
    case Reduction::Kind::premultiply:
      if (plan.tensor_factor.defined()) {
        t.mul_(plan.tensor_factor);
      } else {
        t.mul_(plan.factor);
      }
      [[fallthrough]];
    case Reduction::Kind::direct:
      comm.all_reduce(t.data_ptr(), t.data_ptr(), count, plan.type, plan.op, algorithm);
      return;
    case Reduction::Kind::fold: {
      at::Tensor all = at::empty({comm.size(), t.numel()}, t.options());
      all_gather_bytes(comm, t.data_ptr(), all.data_ptr(), bytes_of(t));
      at::Tensor folded = all[0].clone();
      for (int r = 1; r < comm.size(); ++r) {
        if (plan.fold == c10d::ReduceOp::BAND) folded.bitwise_and_(all[r]);
        if (plan.fold == c10d::ReduceOp::BOR) folded.bitwise_or_(all[r]);
        if (plan.fold == c10d::ReduceOp::BXOR) folded.bitwise_xor_(all[r]);
      }
      t.view({-1}).copy_(folded);
      return;
    }
  }
}

// reduce to `root`: as all_reduce_tensor where chorus has the op, with the result kept on the root
// only (a fold reduces everywhere, which torch allows: off the root the tensor is unspecified).
inline void reduce_tensor(Comm& comm, at::Tensor& t, const Reduction& plan, int root) {
  if (plan.kind == Reduction::Kind::fold) return all_reduce_tensor(comm, t, plan);
  if (plan.kind == Reduction::Kind::premultiply) {
    if (plan.tensor_factor.defined()) {
      t.mul_(plan.tensor_factor);
    } else {
      t.mul_(plan.factor);
    }
  }
  const auto count = static_cast<std::size_t>(t.numel()) * static_cast<std::size_t>(plan.lanes);
  comm.reduce(t.data_ptr(), comm.rank() == root ? t.data_ptr() : nullptr, count, plan.type, plan.op, root);
}

// reduce_scatter of `input` (n blocks of output's size) into `output`, as the plan says.
inline void reduce_scatter_tensor(Comm& comm, at::Tensor& output, const at::Tensor& input, const Reduction& plan) {
  const auto count = static_cast<std::size_t>(output.numel()) * static_cast<std::size_t>(plan.lanes);
  if (plan.kind == Reduction::Kind::direct) {
    comm.reduce_scatter(input.data_ptr(), output.data_ptr(), count, plan.type, plan.op);
    return;
  }
  // premultiply and fold: reduce everything, keep this rank's block (premultiply scales a copy).
  at::Tensor all = input.clone();
  all_reduce_tensor(comm, all, plan);
  output.view({-1}).copy_(all.view({-1}).narrow(0, comm.rank() * output.numel(), output.numel()));
}

// One block per peer, of any byte size: block p of `send` goes to rank p, which stores it as its
// block from this rank. Sizes are this rank's own (the peer's matching size must be equal, as
// torch requires).
struct Blocks {
  std::vector<const std::byte*> send;
  std::vector<std::size_t> send_bytes;
  std::vector<std::byte*> recv;
  std::vector<std::size_t> recv_bytes;
};

inline void all_to_all_blocks(Comm& comm, const Blocks& blocks) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  std::uint64_t widest = 0;
  for (std::size_t p = 0; p < n; ++p) widest = std::max<std::uint64_t>({widest, blocks.send_bytes[p], blocks.recv_bytes[p]});
  comm.all_reduce(&widest, &widest, 1, chorus::DataType::uint64, chorus::ReduceOp::max, chorus::Algorithm::automatic);
  if (widest == 0) return;
  const auto width = static_cast<std::size_t>(widest);
  std::vector<std::byte> out(n * width);
  std::vector<std::byte> in(n * width);
  for (std::size_t p = 0; p < n; ++p) {
    if (blocks.send_bytes[p] > 0) std::memcpy(out.data() + p * width, blocks.send[p], blocks.send_bytes[p]);
  }
  comm.all_to_all(out.data(), in.data(), width, chorus::DataType::uint8);
  for (std::size_t p = 0; p < n; ++p) {
    if (blocks.recv_bytes[p] > 0) std::memcpy(blocks.recv[p], in.data() + p * width, blocks.recv_bytes[p]);
  }
}

// gather: the root receives every rank's `bytes` into `parts[r]` in rank order.
inline void gather_bytes(Comm& comm, const void* send, const std::vector<void*>& parts, std::size_t bytes, int root) {
  if (comm.rank() != root) {
    comm.send(send, bytes, chorus::DataType::uint8, root);
    return;
  }
  for (int r = 0; r < comm.size(); ++r) {
    if (r == root) {
      if (bytes > 0 && parts[static_cast<std::size_t>(r)] != send) std::memcpy(parts[static_cast<std::size_t>(r)], send, bytes);
    } else {
      comm.recv(parts[static_cast<std::size_t>(r)], bytes, chorus::DataType::uint8, r);
    }
  }
}

// scatter: the root sends `parts[r]` to rank r, in rank order; every rank stores its part in `recv`.
inline void scatter_bytes(Comm& comm, const std::vector<const void*>& parts, void* recv, std::size_t bytes, int root) {
  if (comm.rank() != root) {
    comm.recv(recv, bytes, chorus::DataType::uint8, root);
    return;
  }
  for (int r = 0; r < comm.size(); ++r) {
    if (r == root) {
      if (bytes > 0 && parts[static_cast<std::size_t>(r)] != recv) std::memcpy(recv, parts[static_cast<std::size_t>(r)], bytes);
    } else {
      comm.send(parts[static_cast<std::size_t>(r)], bytes, chorus::DataType::uint8, r);
    }
  }
}

}  // namespace chorus_torch
