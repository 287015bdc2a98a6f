// Export of chorus's schedules as MSCCL XML (to_msccl_xml): every algorithm of the four collectives the
// importer reads, in and out of place, on 2..16 ranks and at counts that cut evenly and unevenly, goes
// through export -> parse_msccl -> verify_msccl and is proven; the thread blocks are one per peer; the
// dependencies the schedule's order needs are there; what the format cannot express is refused naming the
// schedule and the reason.
#include <chorus/algo/build.hpp>
#include <chorus/algo/msccl.hpp>
#include <chorus/algo/verifier.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace test_msccl_export {

namespace {

using namespace chorus::algo;
using chorus::Collective;
using chorus::Error;
using Catch::Matchers::Contains;

constexpr Collective kExported[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                    Collective::all_to_all};

constexpr Pattern kPatterns[] = {Pattern::ring,     Pattern::tree,  Pattern::halving_doubling,
                                 Pattern::one_shot, Pattern::two_shot, Pattern::direct,
                                 Pattern::chain,    Pattern::binomial, Pattern::pairwise};

std::string describe(Collective collective, Pattern pattern, int ranks, std::size_t count, bool in_place,
                     std::size_t slice) {
  return std::string(to_string(pattern)) + " " + to_string(collective) + " ranks=" + std::to_string(ranks) +
         " count=" + std::to_string(count) + (in_place ? " in place" : "") +
         (slice ? " slice=" + std::to_string(slice) : "");
}

// Export, read back, prove. Returns the program read back.
msccl::Program round_trip(const Schedule& schedule, const msccl::ExportOptions& options = {}) {
  const std::string xml = to_msccl_xml(schedule, options);
  const msccl::Program program = parse_msccl(xml);
  const msccl::Verification verdict = msccl::verify_msccl(program);
  INFO(xml);
  REQUIRE(verdict.reason == "");
  REQUIRE(verdict.ok);
  CHECK(verdict.races_checked);
  return program;
}

}  // namespace

TEST_CASE("every exportable schedule round-trips through parse_msccl and verify_msccl", "[msccl][export]") {
  int exported = 0;
  for (Collective collective : kExported) {
    for (Pattern pattern : kPatterns) {
      if (!supports(collective, pattern)) continue;
      for (int ranks = 2; ranks <= 16; ++ranks) {
        // Even chunks, uneven chunks (count not a multiple of ranks), and pipelined slices.
        for (std::size_t count : {std::size_t(ranks) * 2, std::size_t(ranks) * 3 + 1}) {
          for (bool in_place : {false, true}) {
            for (std::size_t slice : {std::size_t{0}, std::size_t{1}}) {
              if (slice && ranks > 5) continue;
              Options options;
              options.in_place = in_place;
              options.slice = slice;
              INFO(describe(collective, pattern, ranks, count, in_place, slice));
              const Schedule schedule = build(collective, pattern, ranks, count, 0, options);
              const msccl::Program program = round_trip(schedule);
              CHECK(program.ngpus == ranks);
              CHECK(program.coll == collective);
              CHECK(program.inplace == in_place);
              ++exported;
            }
          }
        }
      }
    }
  }
  CHECK(exported > 200);
}

TEST_CASE("export: chunk units, buffers, one thread block per peer", "[msccl][export]") {
  SECTION("a 4-rank ring all-reduce of 8 elements: 4 chunks of 2") {
    const msccl::Program program = round_trip(build(Collective::all_reduce, Pattern::ring, 4, 8, 0));
    CHECK(program.nchunksperloop == 4);
    CHECK(program.coll_name == "allreduce");
    CHECK(program.name == "chorus_ring_all_reduce_4");
    CHECK(program.nchannels == 1);
    CHECK(program.outofplace);
    for (const msccl::Gpu& gpu : program.gpus) {
      CHECK(gpu.i_chunks == 4);
      CHECK(gpu.o_chunks == 4);
      CHECK(gpu.s_chunks == 0);
      const int next = (gpu.id + 1) % 4, prev = (gpu.id + 3) % 4;
      std::set<int> peers;
      for (const msccl::ThreadBlock& tb : gpu.thread_blocks) {
        CHECK(tb.chan == 0);
        if (tb.send < 0 && tb.recv < 0) continue;  // local copies
        // One thread block per peer: it sends to and receives from that one peer.
        const int peer = tb.send >= 0 ? tb.send : tb.recv;
        CHECK((tb.send == peer || tb.send == -1));
        CHECK((tb.recv == peer || tb.recv == -1));
        CHECK(peers.insert(peer).second);
        for (const msccl::Step& step : tb.steps) {
          if (step.type != msccl::StepType::nop) CHECK(step.cnt == 1);
        }
      }
      CHECK(peers == std::set<int>{next, prev});
    }
  }
  SECTION("an all-gather of 3 elements per rank on 2 ranks: i = N/ngpus, o = N") {
    const msccl::Program program = round_trip(build(Collective::all_gather, Pattern::ring, 2, 3, 0));
    CHECK(program.nchunksperloop == 2);
    CHECK(program.gpus[0].i_chunks == 1);
    CHECK(program.gpus[0].o_chunks == 2);
  }
  SECTION("a reduce-scatter keeps the executor's spelling; in place it says so") {
    Options options;
    options.in_place = true;
    const msccl::Program program = round_trip(build(Collective::reduce_scatter, Pattern::ring, 3, 2, 0, options));
    CHECK(program.coll_name == "reducescatter");
    CHECK(program.inplace);
    CHECK_FALSE(program.outofplace);
    CHECK(program.name == "chorus_ring_reduce_scatter_3_inplace");
  }
  SECTION("options: name, protocol, a finer nchunksperloop") {
    msccl::ExportOptions options;
    options.name = "mine & \"yours\"";
    options.protocol = msccl::Protocol::ll128;
    options.nchunksperloop = 8;
    const msccl::Program program = round_trip(build(Collective::all_reduce, Pattern::ring, 4, 8, 0), options);
    CHECK(program.name == "mine & \"yours\"");
    CHECK(program.proto == msccl::Protocol::ll128);
    CHECK(program.nchunksperloop == 8);
    for (const msccl::ThreadBlock& tb : program.gpus[1].thread_blocks) {
      for (const msccl::Step& step : tb.steps) {
        if (step.type != msccl::StepType::nop) CHECK(step.cnt == 2);
      }
    }
  }
  SECTION("every required attribute is written") {
    const std::string xml = to_msccl_xml(build(Collective::all_to_all, Pattern::pairwise, 3, 2, 0));
    CHECK(xml.rfind("<algo name=\"chorus_pairwise_all_to_all_3\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"3\" "
                    "ngpus=\"3\" coll=\"alltoall\" inplace=\"0\" outofplace=\"1\" minBytes=\"0\" maxBytes=\"0\">\n",
                    0) == 0);
    CHECK_THAT(xml, Contains("<gpu id=\"2\" i_chunks=\"3\" o_chunks=\"3\" s_chunks=\"0\">"));
    CHECK_THAT(xml, Contains("srcbuf=\"i\" srcoff=\""));
    CHECK(xml.find("<?xml") == std::string::npos);
  }
}

TEST_CASE("export: a received operand elsewhere becomes cpy then rrc; the waits the order needs are there",
          "[msccl][export]") {
  // Out of place, the ring's first reduce step combines the received chunk with the input into the output:
  // rrc's src must equal its dst (msccl-tools and the executor read src differently otherwise).
  const msccl::Program program = round_trip(build(Collective::all_reduce, Pattern::ring, 3, 3, 0));
  int rrc = 0, cpy_before_rrc = 0, waits = 0, flagged = 0;
  for (const msccl::Gpu& gpu : program.gpus) {
    for (const msccl::ThreadBlock& tb : gpu.thread_blocks) {
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const msccl::Step& step = tb.steps[s];
        waits += step.depid >= 0 ? 1 : 0;
        flagged += step.hasdep ? 1 : 0;
        if (step.type != msccl::StepType::recv_reduce_copy) continue;
        ++rrc;
        CHECK(step.srcbuf == step.dstbuf);
        CHECK(step.srcoff == step.dstoff);
        if (s > 0 && tb.steps[s - 1].type == msccl::StepType::copy && tb.steps[s - 1].dstoff == step.dstoff) {
          ++cpy_before_rrc;
        }
      }
    }
  }
  CHECK(rrc == 3 * 2);  // n - 1 reduce steps per rank
  CHECK(cpy_before_rrc == rrc);
  // The all-gather half sends what the reduce half received from the other peer's thread block.
  CHECK(waits > 0);
  CHECK(flagged > 0);
}

TEST_CASE("export: more than one wait rides on nops before the step", "[msccl][export]") {
  // chorus's generators never need two waits for one step; a hand-built all-gather through rank 0 does:
  // rank 0 collects every rank's chunk (one thread block per peer), then forwards the whole output to each
  // peer, which must wait for all the other peers' receives.
  Schedule schedule;
  schedule.collective = Collective::all_gather;
  schedule.pattern = Pattern::direct;
  schedule.ranks = 4;
  schedule.count = 1;
  schedule.steps.resize(4);
  const Span in{Buffer::input, 0};
  auto out = [](std::size_t at) { return Span{Buffer::output, at}; };
  schedule.steps[0].push_back({Op::copy, -1, 1, in, out(0)});
  for (int peer = 1; peer < 4; ++peer) schedule.steps[0].push_back({Op::recv_copy, peer, 1, {}, out(peer)});
  for (int peer = 1; peer < 4; ++peer) schedule.steps[0].push_back({Op::send, peer, 4, out(0), {}});
  for (int rank = 1; rank < 4; ++rank) {
    schedule.steps[rank].push_back({Op::send, 0, 1, in, {}});
    schedule.steps[rank].push_back({Op::recv_copy, 0, 4, {}, out(0)});
  }
  link(schedule);
  REQUIRE(verify(schedule).ok);
  const msccl::Program program = round_trip(schedule);
  int nops = 0;
  for (const msccl::ThreadBlock& tb : program.gpus[0].thread_blocks) {
    for (std::size_t s = 0; s < tb.steps.size(); ++s) {
      if (tb.steps[s].type != msccl::StepType::nop) continue;
      ++nops;
      CHECK(tb.steps[s].depid >= 0);
      std::size_t next = s + 1;
      while (next < tb.steps.size() && tb.steps[next].type == msccl::StepType::nop) ++next;
      REQUIRE(next < tb.steps.size());
      CHECK(tb.steps[next].type == msccl::StepType::send);
      CHECK(tb.steps[next].depid >= 0);  // the executor's rule for the step after nops
    }
  }
  // Each of the 3 forwarding sends waits for the local copy and the two other peers' receives: two nops each.
  CHECK(nops == 3 * 2);
}

TEST_CASE("export refuses what MSCCL's format cannot express, naming the schedule and the reason",
          "[msccl][export]") {
  SECTION("broadcast and reduce") {
    const Schedule broadcast = build(Collective::broadcast, Pattern::chain, 4, 8, 1);
    CHECK_THROWS_MATCHES(to_msccl_xml(broadcast), Error,
                         Catch::Matchers::Message("chorus::algo::msccl::from_schedule: chain broadcast on 4 ranks "
                                                  "(count 8): broadcast is not exported (allreduce, allgather, "
                                                  "reducescatter and alltoall are: the four collectives chorus "
                                                  "imports and verifies)"));
    try {
      to_msccl_xml(build(Collective::reduce, Pattern::binomial, 3, 8, 0));
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == chorus::ErrorCode::unsupported);
    }
  }
  SECTION("a count of 0") {
    CHECK_THROWS_WITH(to_msccl_xml(build(Collective::all_reduce, Pattern::ring, 2, 0, 0)),
                      Contains("ring all_reduce on 2 ranks (count 0): a count of 0 has no chunks to write"));
  }
  SECTION("an nchunksperloop that cuts a step") {
    msccl::ExportOptions options;
    options.nchunksperloop = 2;
    CHECK_THROWS_WITH(to_msccl_xml(build(Collective::all_reduce, Pattern::ring, 4, 8, 0), options),
                      Contains("nchunksperloop 2 does not cut the schedule's steps into whole chunks (the fewest "
                               "that does is 4"));
  }
  SECTION("more steps in one thread block than the executor runs") {
    Options options;
    options.slice = 1;
    CHECK_THROWS_WITH(to_msccl_xml(build(Collective::all_reduce, Pattern::ring, 2, 600, 0, options)),
                      Contains("steps, more than the executor's 256 (fewer slices make fewer steps)"));
  }
  SECTION("more peers than thread blocks on a channel") {
    CHECK_THROWS_WITH(to_msccl_xml(build(Collective::all_to_all, Pattern::pairwise, 40, 1, 0)),
                      Contains("thread blocks, more than the executor's 32 on one channel"));
  }
}

TEST_CASE("to_xml writes what parse_msccl reads back unchanged", "[msccl][export]") {
  const msccl::Program program = msccl::from_schedule(build(Collective::all_reduce, Pattern::tree, 5, 10, 0));
  const msccl::Program back = parse_msccl(msccl::to_xml(program));
  REQUIRE(back.gpus.size() == program.gpus.size());
  CHECK(msccl::to_xml(back) == msccl::to_xml(program));
  for (std::size_t g = 0; g < program.gpus.size(); ++g) {
    REQUIRE(back.gpus[g].thread_blocks.size() == program.gpus[g].thread_blocks.size());
    for (std::size_t t = 0; t < program.gpus[g].thread_blocks.size(); ++t) {
      const auto& a = program.gpus[g].thread_blocks[t];
      const auto& b = back.gpus[g].thread_blocks[t];
      CHECK(a.send == b.send);
      CHECK(a.recv == b.recv);
      REQUIRE(a.steps.size() == b.steps.size());
      for (std::size_t s = 0; s < a.steps.size(); ++s) {
        CHECK(a.steps[s].type == b.steps[s].type);
        CHECK(a.steps[s].depid == b.steps[s].depid);
        CHECK(a.steps[s].deps == b.steps[s].deps);
        CHECK(a.steps[s].hasdep == b.steps[s].hasdep);
      }
    }
  }
}

}  // namespace test_msccl_export
