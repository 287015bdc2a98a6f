// Backend-neutral checking of one call: a collective's every argument check, the byte sizes, and
// in-place detection, turning what the caller passed into the CallDescriptor that every rank
// compares; and send's and recv's arguments. Runs on the calling rank before any communication, so
// a bad call fails alone and at once. Each backend calls it first, then resolves the descriptor's
// pattern and executes.
#pragma once

#include <cstddef>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/data_type.hpp"
#include "../core/reduce_op.hpp"
#include "call_descriptor.hpp"
#include "validate.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

// A collective call as the caller made it (typed calls fill `type` from T).
struct CollectiveArgs {
  Collective collective = Collective::all_reduce;
  DataType type = DataType::float32;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  ReduceOp op = ReduceOp::sum;  // ignored unless the collective reduces
  int root = 0;                 // ignored unless the collective is rooted
  Algorithm algorithm = Algorithm::automatic;
};

struct CheckedCall {
  // Pattern still unresolved (ring); in_place as the schedule needs it.
  CallDescriptor descriptor;
  std::size_t element_size = 1;
  // Rooted collectives ignore one side off the root (broadcast's send, reduce's recv); those
  // pointers are not checked and must not be used.
  bool uses_send = true;
  bool uses_recv = true;
  // send and recv are the documented in-place arrangement (rooted collectives included).
  bool buffers_alias = false;
};

// `rank` names the caller in errors; its .rank is the rank in this communicator.
inline CheckedCall check_collective(const CollectiveArgs& args, RankName rank, int ranks) {
  const Collective c = args.collective;
  const CollectiveTraits& facts = traits(c);
  const char* name = facts.name;
  check_type(name, rank, args.type);
  if (facts.reduces) check_op(name, rank, args.op);
  check_algorithm(name, rank, c, args.algorithm);
  if (facts.rooted) check_root(name, rank, args.root, ranks);

  CheckedCall checked;
  checked.element_size = size_of(args.type);
  const bool is_root = facts.rooted && rank.rank == args.root;
  const auto n = static_cast<std::size_t>(ranks);
  const std::size_t send_bytes =
      checked_bytes(name, rank, args.count, facts.send_per_rank ? n : 1, checked.element_size);
  const std::size_t recv_bytes =
      checked_bytes(name, rank, args.count, facts.recv_per_rank ? n : 1, checked.element_size);
  checked.uses_send = !facts.send_on_root_only || is_root;
  checked.uses_recv = !facts.recv_on_root_only || is_root;
  if (checked.uses_send) check_buffer(name, rank, args.send, args.count, "send");
  if (checked.uses_recv) check_buffer(name, rank, args.recv, args.count, "recv");
  if (args.count > 0 && checked.uses_send && checked.uses_recv) {
    checked.buffers_alias = is_in_place(c, args.send, args.recv, rank.rank, args.count, checked.element_size);
    check_overlap(name, rank, args.send, send_bytes, args.recv, recv_bytes, checked.buffers_alias);
  }

  CallDescriptor& d = checked.descriptor;
  d.kind = kind_of(c);
  d.type = args.type;
  d.count = args.count;
  d.op = facts.reduces ? args.op : ReduceOp::sum;
  d.root = facts.rooted ? args.root : 0;
  // Rooted schedules read the root's input and write its output element-wise in order, so the
  // out-of-place schedule is also right in place; using it everywhere lets the root choose alone.
  d.in_place = facts.rooted ? false : checked.buffers_alias;
  return checked;
}

// send's or recv's arguments, the same on every backend: a valid type, a peer that is a rank of this
// `size`-rank communicator and not this rank (a synchronous send to itself never completes, and a
// device send and its recv are separate launches), a buffer for count > 0, a byte size that fits.
// Returns the byte size. Call runtime::check_comm first: a null communicator has no rank to name.
inline std::size_t check_point_to_point(const char* call, RankName rank, int size, const void* data, std::size_t count,
                                        DataType type, int peer) {
  check_type(call, rank, type);
  check_peer(call, rank, peer, size);
  check_buffer(call, rank, data, count, "data");
  return checked_bytes(call, rank, count, 1, size_of(type));
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
