// A call descriptor as bytes another process reads (MPI messages, a shared-memory segment): fixed-width
// fields and no padding, so ranks built by different compilers agree, and the call's sequence number with
// it, so a rank that skipped or added a call is told apart from one that disagrees on a field.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/config.hpp"
#include "call_descriptor.hpp"

CHORUS_NAMESPACE_BEGIN namespace runtime {

struct WireCall {
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  std::int32_t kind = 0, type = 0, op = 0, root = 0, pattern = 0, in_place = 0;
};
static_assert(sizeof(WireCall) == 40, "WireCall must have no padding");

inline WireCall to_wire(const CallDescriptor& d, std::uint64_t sequence) {
  WireCall w;
  w.sequence = sequence;
  w.count = d.count;
  w.kind = static_cast<std::int32_t>(d.kind);
  w.type = static_cast<std::int32_t>(d.type);
  w.op = static_cast<std::int32_t>(d.op);
  w.root = d.root;
  w.pattern = static_cast<std::int32_t>(d.pattern);
  w.in_place = d.in_place ? 1 : 0;
  return w;
}

inline CallDescriptor from_wire(const WireCall& w) {
  CallDescriptor d;
  d.kind = static_cast<CallKind>(w.kind);
  d.type = static_cast<DataType>(w.type);
  d.count = static_cast<std::size_t>(w.count);
  d.op = static_cast<ReduceOp>(w.op);
  d.root = w.root;
  d.pattern = static_cast<algo::Pattern>(w.pattern);
  d.in_place = w.in_place != 0;
  return d;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::runtime
