// Hand-written MSCCL XML programs shared by the importer's and the verifier's tests (test_msccl_import.cpp,
// test_msccl_verify.cpp) and seeded into the fuzz corpus (tests/fuzz/corpus/msccl/): a ring all-reduce, an
// out-of-place all-gather, an all-to-all through scratch, a reduce-scatter on two channels. Written here for
// these tests, not copied from msccl-tools; and `edit`, how a test breaks one of them in one place.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

namespace msccl_fixtures {

// 4 ranks, one ring on channel 0, in place: reduce-scatter with rrs/rrcs, then all-gather with rcs/r.
// Rank r sends chunk r first; chunk c is complete on rank c+3 and travels on from there.
const std::string kRing = R"xml(<algo name="ring_allreduce_4" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="3" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="rrs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="4" type="rcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="5" type="rcs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="6" type="r" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="2" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="rrs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrcs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="4" type="rcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="5" type="rcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="6" type="r" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="2" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="3" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="rrs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrcs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="4" type="rcs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="5" type="rcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="6" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="3" i_chunks="4" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="2" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="rrs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="4" type="rcs" srcbuf="i" srcoff="3" dstbuf="i" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="5" type="rcs" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="6" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)xml";

// 2 ranks, out of place: each sends its one input chunk, receives the other's, copies its own.
const std::string kAllgather = R"xml(<?xml version="1.0"?>
<!-- hand-written: two ranks, one chunk each -->
<algo name="allgather_pair" proto="LL" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="1" deps="0" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="0" chan="0">
      <step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="1" deps="0" hasdep="0"/>
    </tb>
  </gpu>
</algo>)xml";

// 2 ranks, out of place, through scratch: the peer's chunk lands in s[0] and a second thread block
// copies it to the output once the receive has flagged (depid/deps/hasdep).
const std::string kAlltoall = R"xml(<algo name="alltoall_scratch" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="alltoall" inplace="0">
  <gpu id="0" i_chunks="2" o_chunks="2" s_chunks="1">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="s" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="0" deps="1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="2" s_chunks="1">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="s" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="0" deps="1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)xml";

// 2 ranks, 2 channels, the executor's spelling "reducescatter": channel 0 reduces on receipt (rrc),
// channel 1 receives into scratch and reduces locally (r, then re). Rank r keeps i[2r], i[2r+1].
const std::string kReduceScatter = R"xml(<algo name="rs_two_channels" proto="LL128" nchannels="2" nchunksperloop="4" ngpus="2" coll="reducescatter" inplace="0" minBytes="0" maxBytes="1048576" redop="sum">
  <gpu id="0" i_chunks="4" o_chunks="2" s_chunks="1">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="2" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="1" recv="1" chan="1">
      <step s="0" type="s" srcbuf="i" srcoff="3" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="3" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="re" srcbuf="s" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="4" o_chunks="2" s_chunks="1">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="2" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="0" recv="0" chan="1">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="3" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="re" srcbuf="s" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)xml";

// The 1-based line of `position` in `text`.
inline int line_at(const std::string& text, std::size_t position) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(position), '\n'));
}

// A fixture with one edit: `from` replaced by `to` at its first occurrence after `anchor` (which must
// occur once), and the line the edit is on.
struct Edited {
  std::string text;
  int line;
};
inline Edited edit(const std::string& base, const std::string& anchor, const std::string& from, const std::string& to) {
  const std::size_t at_anchor = base.find(anchor);
  REQUIRE(at_anchor != std::string::npos);
  REQUIRE(base.find(anchor, at_anchor + 1) == std::string::npos);
  const std::size_t at = base.find(from, at_anchor);
  REQUIRE(at != std::string::npos);
  std::string text = base;
  text.replace(at, from.size(), to);
  return {text, line_at(base, at)};
}

}  // namespace msccl_fixtures
