// Imported MSCCL programs run as chorus schedules (msccl::to_schedule): the importer's fixtures (an in-place
// ring all-reduce, an all-gather, an all-to-all through scratch, a two-channel reduce-scatter), a two-channel
// ring all-reduce, and programs that need the bridges to_schedule builds (a message taken before one sent
// earlier on another channel; a send whose range its sender overwrites before the receiver takes it; an
// in-place reduce-scatter that writes its input) run through the step interpreter on threads (the mailbox
// test transport, which copies as MPI does) bit-exact against a naive reference on integer data; chorus's
// symbolic verifier, which models the host backend's zero-copy reads, proves each converted schedule; and
// every exported chorus schedule, imported back, computes what the original computes.
#include <chorus/algo/build.hpp>
#include <chorus/algo/msccl.hpp>
#include <chorus/algo/verifier.hpp>
#include <chorus/runtime/element_ops.hpp>
#include <chorus/runtime/interpreter.hpp>

#include <catch2/catch.hpp>

#include "msccl_fixtures.hpp"
#include "support/mailbox_comm.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace test_msccl_run {

namespace {

using namespace chorus::algo;
using chorus::Collective;
using chorus::Error;
using Catch::Matchers::Contains;
using Data = std::vector<std::int32_t>;

// Rank r's input element k: distinct integers whose sums stay exact.
std::int32_t value(int rank, std::size_t k) { return static_cast<std::int32_t>(1000 * (rank + 1) + k); }

// What every rank's output holds after the collective, computed directly.
std::vector<Data> reference(Collective collective, int n, std::size_t count) {
  std::vector<Data> out(static_cast<std::size_t>(n), Data(recv_count(collective, count, n)));
  for (int r = 0; r < n; ++r) {
    Data& o = out[static_cast<std::size_t>(r)];
    for (std::size_t k = 0; k < o.size(); ++k) {
      switch (collective) {
        case Collective::all_reduce:
          for (int j = 0; j < n; ++j) o[k] += value(j, k);
          break;
        case Collective::reduce_scatter:
          for (int j = 0; j < n; ++j) o[k] += value(j, static_cast<std::size_t>(r) * count + k);
          break;
        case Collective::all_gather: o[k] = value(static_cast<int>(k / count), k % count); break;
        case Collective::all_to_all:
          o[k] = value(static_cast<int>(k / count), static_cast<std::size_t>(r) * count + k % count);
          break;
        default: FAIL("no reference");
      }
    }
  }
  return out;
}

// Runs the schedule through the step interpreter, one thread per rank, bytes copied through per-pair queues.
// In place, each rank's buffers alias as the collective's in-place call says.
std::vector<Data> run(const Schedule& schedule) {
  const int n = schedule.ranks;
  const std::size_t in = schedule.input_count(), out = schedule.output_count();
  const std::size_t count = schedule.count;
  mailbox::World world(n);
  std::vector<Data> inputs(n), outputs(n);
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r) {
    for (std::size_t k = 0; k < in; ++k) inputs[r].push_back(value(r, k));
    outputs[r].assign(std::max(in, out), -1);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Data& mine = outputs[r];
        chorus::runtime::Buffers buffers{reinterpret_cast<const std::byte*>(inputs[r].data()),
                                         reinterpret_cast<std::byte*>(mine.data()), nullptr};
        if (schedule.in_place) {
          const std::size_t at = schedule.collective == Collective::all_gather ? r * count : 0;
          std::copy(inputs[r].begin(), inputs[r].end(), mine.begin() + static_cast<std::ptrdiff_t>(at));
          buffers.input = reinterpret_cast<const std::byte*>(mine.data() + at);
          if (schedule.collective == Collective::reduce_scatter) {
            buffers.output = reinterpret_cast<std::byte*>(mine.data() + r * count);
          }
        }
        mailbox::QueueTransport transport(world, "msccl", r);
        const chorus::runtime::StepMath math{sizeof(std::int32_t), chorus::runtime::element_ops(chorus::DataType::int32),
                                             chorus::ReduceOp::sum};
        chorus::runtime::interpret("msccl", r, schedule, buffers, math, transport);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    REQUIRE(errors[r] == "");
    // The output as the caller sees it.
    std::size_t at = schedule.in_place && schedule.collective == Collective::reduce_scatter ? r * count : 0;
    outputs[r] = Data(outputs[r].begin() + static_cast<std::ptrdiff_t>(at),
                      outputs[r].begin() + static_cast<std::ptrdiff_t>(at + out));
  }
  return outputs;
}

// Imports, converts for `count`, proves the schedule with chorus's verifier, runs it against the reference.
Schedule check_runs(const std::string& xml, std::size_t count) {
  const msccl::Program program = parse_msccl(xml);
  const Schedule schedule = msccl::to_schedule(program, count);
  INFO(to_table(schedule));
  CHECK(schedule.collective == program.coll);
  CHECK(schedule.in_place == program.inplace);
  const Verdict verdict = verify(schedule);
  CHECK(verdict.problem == "");
  CHECK(run(schedule) == reference(program.coll, program.ngpus, count));
  return schedule;
}

// A ring all-reduce in place on `n` ranks with one ring per channel, each ring on its own n chunks:
// reduce-scatter with rrs/rrcs, then all-gather with rcs/r, as msccl-tools' ring examples are built.
std::string two_channel_ring(int n) {
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  std::string xml = "<algo name=\"ring_2ch\" proto=\"Simple\" nchannels=\"2\" nchunksperloop=\"" + std::to_string(2 * n) +
                    "\" ngpus=\"" + std::to_string(n) + "\" coll=\"allreduce\" inplace=\"1\">\n";
  for (int r = 0; r < n; ++r) {
    xml += "<gpu id=\"" + std::to_string(r) + "\" i_chunks=\"" + std::to_string(2 * n) + "\" o_chunks=\"0\" s_chunks=\"0\">\n";
    for (int c = 0; c < 2; ++c) {
      xml += "<tb id=\"" + std::to_string(c) + "\" send=\"" + std::to_string(mod(r + 1)) + "\" recv=\"" +
             std::to_string(mod(r - 1)) + "\" chan=\"" + std::to_string(c) + "\">\n";
      int s = 0;
      auto step = [&](const char* type, int chunk) {
        const std::string at = std::to_string(c * n + mod(chunk));
        xml += "<step s=\"" + std::to_string(s++) + "\" type=\"" + type + "\" srcbuf=\"i\" srcoff=\"" + at +
               "\" dstbuf=\"i\" dstoff=\"" + at + "\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n";
      };
      step("s", r);
      for (int k = 1; k <= n - 2; ++k) step("rrs", r - k);
      step("rrcs", r + 1);
      for (int k = 0; k <= n - 3; ++k) step("rcs", r - k);
      step("r", r + 2);
      xml += "</tb>\n";
    }
    xml += "</gpu>\n";
  }
  return xml + "</algo>\n";
}

// Two ranks, two channels, an all-gather whose channel-0 receive waits for the channel-1 receive: each
// rank takes the message sent second before the one sent first, which chorus (one FIFO per pair) receives
// into scratch first.
const std::string kCrossChannel = R"xml(<algo name="cross_channel" proto="Simple" nchannels="2" nchunksperloop="4" ngpus="2" coll="allgather" inplace="0">
  <gpu id="0" i_chunks="2" o_chunks="4" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2" cnt="1" depid="1" deps="1" hasdep="0"/>
    </tb>
    <tb id="1" send="1" recv="1" chan="1">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="1" dstbuf="o" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="2" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="4" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="1" hasdep="0"/>
    </tb>
    <tb id="1" send="0" recv="0" chan="1">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="o" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2" cnt="2" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)xml";

// Two ranks, an all-gather that stages both its chunks through one scratch slot: the second copy into s[0]
// waits only for the first send, which in MSCCL has copied the data into the connection. A chorus send lets
// the receiver read s[0] later, so the first is sent from a private copy.
const std::string kScratchReuse = R"xml(<algo name="scratch_reuse" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="2" coll="allgather" inplace="0">
  <gpu id="0" i_chunks="2" o_chunks="4" s_chunks="1">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="s" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="0" hasdep="1"/>
      <step s="1" type="s" srcbuf="s" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="1" deps="1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="i" srcoff="1" dstbuf="o" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="0" deps="0" hasdep="1"/>
      <step s="2" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="2" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="4" s_chunks="1">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="s" srcoff="0" dstbuf="o" dstoff="2" cnt="1" depid="1" deps="0" hasdep="1"/>
      <step s="1" type="s" srcbuf="s" srcoff="0" dstbuf="o" dstoff="3" cnt="1" depid="1" deps="1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="i" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="1" dstbuf="s" dstoff="0" cnt="1" depid="0" deps="0" hasdep="1"/>
      <step s="2" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2" cnt="2" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)xml";

int count_ops(const Schedule& schedule, Op op, Buffer buffer) {
  int found = 0;
  for (const auto& steps : schedule.steps) {
    for (const Step& step : steps) {
      const Span& span = op == Op::send ? step.src : step.dst;
      found += step.op == op && span.buffer == buffer ? 1 : 0;
    }
  }
  return found;
}

}  // namespace

TEST_CASE("the importer's fixtures run bit-exact on the step interpreter", "[msccl][run]") {
  SECTION("in-place ring all-reduce, 4 ranks") {
    for (std::size_t count : {4, 12, 400}) check_runs(msccl_fixtures::kRing, count);
  }
  SECTION("out-of-place all-gather, 2 ranks") {
    for (std::size_t count : {1, 7}) check_runs(msccl_fixtures::kAllgather, count);
  }
  SECTION("all-to-all through scratch, 2 ranks") {
    for (std::size_t count : {1, 5}) check_runs(msccl_fixtures::kAlltoall, count);
  }
  SECTION("reduce-scatter on two channels, rrc and r + re, 2 ranks") {
    for (std::size_t count : {2, 6}) check_runs(msccl_fixtures::kReduceScatter, count);
  }
}

TEST_CASE("a ring all-reduce on two channels runs bit-exact", "[msccl][run]") {
  for (int n : {2, 3, 4, 5}) {
    INFO(n << " ranks");
    const std::string xml = two_channel_ring(n);
    REQUIRE(msccl::verify_msccl(parse_msccl(xml)).ok);
    check_runs(xml, 2 * static_cast<std::size_t>(n) * 3);
  }
}

TEST_CASE("to_schedule bridges MSCCL's executor and chorus's", "[msccl][run]") {
  SECTION("a message taken before one sent earlier on another channel is received into scratch first") {
    const Schedule schedule = check_runs(kCrossChannel, 4);
    CHECK(count_ops(schedule, Op::recv_copy, Buffer::scratch) == 2);  // one stash per rank
  }
  SECTION("a send whose range is overwritten before it is taken goes from a private copy") {
    REQUIRE(msccl::verify_msccl(parse_msccl(kScratchReuse)).ok);
    const Schedule schedule = check_runs(kScratchReuse, 2);
    CHECK(count_ops(schedule, Op::copy, Buffer::scratch) == 2 * 3);  // two stagings and a private copy per rank
  }
  SECTION("rrs reduces into scratch and sends that") {
    const Schedule schedule = check_runs(msccl_fixtures::kRing, 4);
    CHECK(count_ops(schedule, Op::send, Buffer::scratch) == 4 * 2);  // n - 2 rrs per rank
  }
  SECTION("an in-place reduce-scatter that writes its input works on a copy of it") {
    // A ring reduce-scatter in place, 3 ranks: the partial sums travel through i, which chorus keeps read-only.
    const std::string xml = R"xml(<algo name="rs_inplace" proto="Simple" nchannels="1" nchunksperloop="3" ngpus="3" coll="reduce_scatter" inplace="1">
  <gpu id="0" i_chunks="3" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="2" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrc" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="3" o_chunks="0" s_chunks="0">
    <tb id="0" send="2" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrc" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="2" i_chunks="3" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="rrc" srcbuf="i" srcoff="2" dstbuf="i" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)xml";
    REQUIRE(msccl::verify_msccl(parse_msccl(xml)).ok);
    const Schedule schedule = check_runs(xml, 2);
    for (const auto& steps : schedule.steps) {
      REQUIRE(steps.size() > 2);
      CHECK(steps.front().op == Op::copy);  // the input into scratch
      CHECK(steps.front().src.buffer == Buffer::input);
      CHECK(steps.back().op == Op::copy);   // this rank's chunk back to the output
      CHECK(steps.back().dst.buffer == Buffer::output);
    }
  }
}

TEST_CASE("to_schedule refuses unverified programs and counts that cut no chunks", "[msccl][run]") {
  CHECK_THROWS_WITH(msccl::to_schedule(parse_msccl(msccl_fixtures::kRing), 6),
                    "chorus::algo::msccl::to_schedule: \"ring_allreduce_4\": count 6 gives 6 input elements per rank, "
                    "not a positive multiple of the 4 input chunks the program has");
  CHECK_THROWS_WITH(msccl::to_schedule(parse_msccl(msccl_fixtures::kAllgather), 0), Contains("count 0"));
  const auto broken = msccl_fixtures::edit(msccl_fixtures::kAllgather, "type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\"",
                                           "dstoff=\"1\"", "dstoff=\"0\"");
  CHECK_THROWS_WITH(msccl::to_schedule(parse_msccl(broken.text), 1),
                    Contains("chorus::algo::msccl::to_schedule: allgather_pair is not verified: "));
}

TEST_CASE("exported chorus schedules, imported back, compute what the originals compute", "[msccl][run]") {
  for (Collective collective : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                Collective::all_to_all}) {
    for (Pattern pattern : {Pattern::ring, Pattern::tree, Pattern::halving_doubling, Pattern::one_shot,
                            Pattern::two_shot, Pattern::direct, Pattern::pairwise}) {
      if (!supports(collective, pattern)) continue;
      for (int ranks : {2, 3, 4, 5, 8}) {
        for (bool in_place : {false, true}) {
          Options options;
          options.in_place = in_place;
          const std::size_t count = 2 * static_cast<std::size_t>(ranks) + 1;
          INFO(to_string(pattern) << " " << to_string(collective) << " ranks=" << ranks << (in_place ? " in place" : ""));
          const Schedule original = build(collective, pattern, ranks, count, 0, options);
          const msccl::Program program = parse_msccl(to_msccl_xml(original));
          const std::vector<Data> want = run(original);
          CHECK(want == reference(collective, ranks, count));
          for (std::size_t times : {1, 3}) {  // the same chunks, and chunks three times as long
            const Schedule imported = msccl::to_schedule(program, count * times);
            CHECK(verify(imported).problem == "");
            if (times == 1) CHECK(run(imported) == want);
            if (times == 3) CHECK(run(imported) == reference(collective, ranks, count * times));
          }
        }
      }
    }
  }
}

}  // namespace test_msccl_run
