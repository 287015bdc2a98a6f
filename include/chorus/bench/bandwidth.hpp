// Algorithm and bus bandwidth, defined exactly as nccl-tests defines them, so chorus-bench numbers
// can be laid next to published nccl-tests tables.
//
// A row of the size sweep is given in bytes (S). For each collective that byte count fixes the
// count passed to the call, the buffer sizes, and the numerator of algbw:
//
//   collective       call count (elements)     algbw numerator     busbw factor
//   all_reduce       S / size                  count * size         2(n-1)/n
//   reduce_scatter   S / size / n  (per rank)  count * size * n     (n-1)/n
//   all_gather       S / size / n  (per rank)  count * size * n     (n-1)/n
//   all_to_all       S / size / n  (per peer)  count * size * n     (n-1)/n
//   broadcast        S / size                  count * size         1
//   reduce           S / size                  count * size         1
//
// algbw = bytes / time, busbw = algbw * factor: core/bus_bandwidth.hpp.
#pragma once

#include <algorithm>
#include <cstddef>

#include "../core/bus_bandwidth.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"

CHORUS_NAMESPACE_BEGIN namespace bench {

// The formulas themselves are core vocabulary (the cost model reports them too).
using chorus::algbw_gbps;
using chorus::bus_factor;
using chorus::busbw_gbps;

// Whether the collective's count is per rank (the sweep's bytes are split n ways): true when
// either buffer holds ranks * count elements.
inline bool count_is_per_rank(Collective collective) {
  return traits(collective).send_per_rank || traits(collective).recv_per_rank;
}

// What one sweep size means for one collective (all counts in elements).
struct Shape {
  std::size_t count = 0;         // passed to the call
  std::size_t input_count = 0;   // elements of each rank's send buffer
  std::size_t output_count = 0;  // elements of each rank's receive buffer
  std::size_t bytes = 0;         // the table's "size" column and algbw's numerator
  std::size_t elements = 0;      // the table's "count" column: sweep bytes / element size
};

// Sizes that do not divide evenly round down, as nccl-tests does: 10 bytes of float all_reduce
// moves 2 elements, and 16 bytes of float all_gather on 3 ranks moves 1 element per rank.
inline Shape shape_of(Collective collective, std::size_t sweep_bytes, std::size_t element_size,
                      int ranks) {
  Shape shape;
  const auto n = static_cast<std::size_t>(ranks);
  shape.elements = sweep_bytes / element_size;
  shape.count = count_is_per_rank(collective) ? shape.elements / n : shape.elements;
  shape.input_count = send_count(collective, shape.count, ranks);
  shape.output_count = recv_count(collective, shape.count, ranks);
  shape.bytes = std::max(shape.input_count, shape.output_count) * element_size;
  return shape;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::bench
