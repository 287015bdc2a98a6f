// verify_msccl proves the hand-written fixtures the importer reads (msccl_fixtures.hpp: a ring
// all-reduce, an all-gather, an all-to-all through scratch, a two-channel reduce-scatter) and refuses
// hand-broken variants of them, one per kind: a receive no send matches, a dependency cycle, a
// dependency whose flag is never set, message counts that differ, a message nobody receives, a wrong
// chunk offset, a race between thread blocks. Every refusal names rank, thread block, step and chunk.
#include <chorus/algo/msccl.hpp>

#include <catch2/catch.hpp>

#include "msccl_fixtures.hpp"

#include <cstddef>
#include <random>
#include <string>

namespace test_msccl_verify {

namespace {

using namespace chorus::algo;
using chorus::Error;
using Catch::Matchers::Contains;
using msccl::Problem;
using msccl::Verification;

using msccl_fixtures::kAllgather;
using msccl_fixtures::kAlltoall;
using msccl_fixtures::kReduceScatter;
using msccl_fixtures::kRing;

// An in-place ring all-reduce on n ranks in kRing's pattern: rank r sends chunk r, reduces chunks
// r-1 .. r-(n-2) on the way (rrs), completes chunk r+1 (rrcs), forwards the finished chunks (rcs) and
// receives the last one (r).
std::string ring_allreduce(int n) {
  auto step = [](int s, const char* type, int chunk) {
    const std::string off = std::to_string(chunk);
    return "      <step s=\"" + std::to_string(s) + "\" type=\"" + type + "\" srcbuf=\"i\" srcoff=\"" + off +
           "\" dstbuf=\"i\" dstoff=\"" + off + "\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n";
  };
  const std::string chunks = std::to_string(n);
  std::string xml = "<algo name=\"ring\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"" + chunks + "\" ngpus=\"" +
                    chunks + "\" coll=\"allreduce\" inplace=\"1\">\n";
  for (int r = 0; r < n; ++r) {
    auto chunk = [&](int k) { return ((r - k) % n + n) % n; };
    xml += "  <gpu id=\"" + std::to_string(r) + "\" i_chunks=\"" + chunks + "\" o_chunks=\"0\" s_chunks=\"0\">\n";
    xml += "    <tb id=\"0\" send=\"" + std::to_string((r + 1) % n) + "\" recv=\"" + std::to_string(chunk(1)) + "\" chan=\"0\">\n";
    int s = 0;
    xml += step(s++, "s", r);
    for (int k = 1; k <= n - 2; ++k) xml += step(s++, "rrs", chunk(k));
    xml += step(s++, "rrcs", chunk(n - 1));
    for (int k = 0; k <= n - 3; ++k) xml += step(s++, "rcs", chunk(k));
    xml += step(s++, "r", chunk(n - 2));
    xml += "    </tb>\n  </gpu>\n";
  }
  return xml + "</algo>\n";
}

// `from` replaced by `to` at its first occurrence after `anchor`, which must occur once.
std::string edited(const std::string& base, const std::string& anchor, const std::string& from, const std::string& to) {
  return msccl_fixtures::edit(base, anchor, from, to).text;
}

Verification verified(const std::string& xml) { return msccl::verify_msccl(parse_msccl(xml)); }

// The program is refused for `problem`, and the reason holds every piece of `parts`.
std::string refused(const std::string& xml, Problem problem, std::initializer_list<std::string> parts) {
  const Verification result = verified(xml);
  INFO(result.reason);
  CHECK_FALSE(result.ok);
  CHECK(result.problem == problem);
  for (const std::string& part : parts) CHECK_THAT(result.reason, Contains(part));
  return result.reason;
}

// Anchors: rank 0's thread blocks in kAlltoall, and their steps.
const std::string kA2aGpu0Send = "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\"";
const std::string kA2aGpu0Recv = "<step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\"";
const std::string kA2aGpu0Copy = "<step s=\"1\" type=\"cpy\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\"";
const std::string kA2aGpu1Send = "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\"";

}  // namespace

TEST_CASE("verify_msccl proves the importer's four fixtures", "[msccl]") {
  for (const std::string* xml : {&kRing, &kAllgather, &kAlltoall, &kReduceScatter}) {
    const Verification result = verified(*xml);
    INFO(result.reason);
    CHECK(result.ok);
    CHECK(result.problem == Problem::none);
    CHECK(result.reason.empty());
    CHECK(result.races_checked);
  }
  CHECK(verified(kRing).steps == 28);
  CHECK(verified(kAllgather).steps == 8);
  CHECK(verified(kAlltoall).steps == 8);
  CHECK(verified(kReduceScatter).steps == 12);
  // msccl-tools' spelling of the reduce-scatter.
  CHECK(verified(edited(kReduceScatter, "<algo", "coll=\"reducescatter\"", "coll=\"reduce_scatter\"")).ok);
  // In place, the reduce-scatter's o[c] is i[rank*2 + c] and the all-to-all's o is i: both still verify (the
  // all-to-all's copy into o[1] = i[1] waits for the receive, which comes after the send that reads i[1]).
  CHECK(verified(edited(kReduceScatter, "<algo", "inplace=\"0\"", "inplace=\"1\"")).ok);
  CHECK(verified(edited(kAlltoall, "<algo", "inplace=\"0\"", "inplace=\"1\"")).ok);
  // Without that wait the in-place all-to-all overwrites i[1] before (or while) it is sent.
  const std::string racy = edited(edited(kAlltoall, "<algo", "inplace=\"0\"", "inplace=\"1\""), kA2aGpu0Copy,
                                "depid=\"0\" deps=\"1\"", "depid=\"-1\" deps=\"-1\"");
  refused(racy, Problem::race, {"race on rank 0: "});
  // The all-gather in place: rank r's i[0] is its o[r], so the copy i[0] -> o[r] writes the very chunk the
  // sending thread block reads, unordered: a race that only aliasing creates.
  refused(edited(kAllgather, "<algo", "inplace=\"0\" outofplace=\"1\"", "inplace=\"1\" outofplace=\"0\""),
          Problem::race, {"race on rank 0: ", "thread block 2 step 0 (cpy, line 12) writes o[0]",
                          "rank 0 thread block 0 step 0 (s, line 6) reads i[0] (the same chunk, aliased in place)"});
}

TEST_CASE("verify_msccl: a ring needs two buffered messages per connection when fused steps run whole", "[msccl]") {
  const Verification ring = verified(kRing);
  REQUIRE(ring.ok);
  CHECK(ring.buffering == 2);
  REQUIRE(ring.connections.size() == 4);
  for (int r = 0; r < 4; ++r) {
    const msccl::ConnectionUse& use = ring.connections[r];
    CHECK(use.sender == r);
    CHECK(use.receiver == (r + 1) % 4);
    CHECK(use.chan == 0);
    CHECK(use.messages == 6);  // s, rrs, rrs, rrcs, rcs, rcs
    CHECK(use.buffered <= 2);
    CHECK(use.unbounded >= use.buffered);
  }
  // Point to point programs that send once per connection need one.
  const Verification a2a = verified(kAlltoall);
  CHECK(a2a.buffering == 1);
  REQUIRE(a2a.connections.size() == 2);
  CHECK(a2a.connections[0].messages == 1);
  const Verification rs = verified(kReduceScatter);
  CHECK(rs.buffering == 1);
  CHECK(rs.connections.size() == 4);  // two ranks, two channels, both directions
}

TEST_CASE("verify_msccl proves generated in-place ring all-reduces on 2..12 ranks, each needing two messages of buffering",
          "[msccl]") {
  for (int n = 2; n <= 12; ++n) {
    const std::string xml = ring_allreduce(n);
    const Verification result = verified(xml);
    INFO("ranks " << n << ": " << result.reason);
    CHECK(result.ok);
    CHECK(result.steps == n * (2 * n - 1));
    CHECK(result.buffering == 2);  // with one, every rank has sent and waits for room to send on
    CHECK(result.connections.size() == static_cast<std::size_t>(n));
  }
}

TEST_CASE("verify_msccl refuses a receive no send matches: deadlock, naming what each stuck step waits for",
          "[msccl]") {
  // Rank 1 no longer sends: rank 0's receive and the copy that waits for it are stuck.
  const std::string xml = edited(kAlltoall, "<gpu id=\"1\"", "type=\"s\"", "type=\"nop\"");
  refused(xml, Problem::deadlock,
          {"deadlock: 2 of 8 steps cannot run",
           "rank 0 thread block 0 step 1 (r, line 5) waits for a message from rank 1 on channel 0",
           "(its thread block 0 has finished after sending 0 message(s), none left)", "to write chunk(s) s[0]",
           "rank 0 thread block 1 step 1 (cpy, line 9) waits for rank 0 thread block 0 step 1 (that thread block is "
           "stuck at step 1)"});
}

TEST_CASE("verify_msccl refuses a receive on a connection nobody sends on", "[msccl]") {
  // Rank 1 of the all-gather sends on channel 1; rank 0 receives on channel 0.
  std::string xml = edited(kAllgather, "<algo", "nchannels=\"1\"", "nchannels=\"2\"");
  xml = edited(xml, "<gpu id=\"1\"", "<tb id=\"0\" send=\"0\" recv=\"-1\" chan=\"0\">", "<tb id=\"0\" send=\"0\" recv=\"-1\" chan=\"1\">");
  refused(xml, Problem::deadlock,
          {"rank 0 thread block 1 step 0 (r, line 9) waits for a message from rank 1 on channel 0, but no thread block of "
           "rank 1 sends to rank 0 on channel 0, to write chunk(s) o[1]",
           "rank 0 thread block 2 step 1 (nop, line 13) waits for rank 0 thread block 1 step 0"});
}

TEST_CASE("verify_msccl refuses a dependency cycle and a dependency whose flag is never set", "[msccl]") {
  // Rank 0: thread block 0's send waits for thread block 1's last copy, which waits for thread block 0's receive.
  const std::string flagged = edited(kAlltoall, kA2aGpu0Copy, "hasdep=\"0\"", "hasdep=\"1\"");
  const std::string cycle = edited(flagged, kA2aGpu0Send, "depid=\"-1\" deps=\"-1\"", "depid=\"1\" deps=\"1\"");
  refused(cycle, Problem::deadlock,
          {"rank 0 thread block 0 step 0 (s, line 4) waits for rank 0 thread block 1 step 1 (that thread block is stuck "
           "at step 1)",
           "rank 0 thread block 1 step 1 (cpy, line 9) waits for rank 0 thread block 0 step 1 (that thread block is "
           "stuck at step 0)",
           "rank 1 thread block 0 step 1 (r, line 15) waits for a message from rank 0 on channel 0",
           "cycle: rank 0 thread block 0 step 0 -> rank 0 thread block 1 step 1 -> rank 0 thread block 0"});
  // The receive the copy waits for no longer flags its completion: the copy waits forever.
  const std::string unflagged = edited(kAlltoall, kA2aGpu0Recv, "hasdep=\"1\"", "hasdep=\"0\"");
  refused(unflagged, Problem::deadlock,
          {"deadlock: 1 of 8 steps cannot run",
           "rank 0 thread block 1 step 1 (cpy, line 9) waits for rank 0 thread block 0 step 1, which never flags it "
           "(no step from 1 on has hasdep=\"1\")"});
}

TEST_CASE("verify_msccl refuses messages whose send and receive counts differ, and messages nobody receives",
          "[msccl]") {
  const std::string two = edited(kAlltoall, kA2aGpu0Send, "srcoff=\"1\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\"",
                               "srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"2\"");
  refused(two, Problem::mismatched_message,
          {"mismatched message: rank 1 thread block 0 step 1 (r, line 15) receives 1 chunk(s) from rank 0 on channel 0",
           "sent by rank 0 thread block 0 step 0 (s, line 4), holds 2"});
  // Rank 0 of the all-gather sends its chunk twice; rank 1 receives once.
  const std::string send = "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
                           "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n";
  const std::string twice = edited(kAllgather, "<gpu id=\"0\"", send, send + edited(send, "<step", "s=\"0\"", "s=\"1\""));
  refused(twice, Problem::mismatched_message,
          {"mismatched message: rank 0 thread block 0 step 1 (s, line 7) sends 1 chunk(s) to rank 1 on channel 0 that "
           "no receive takes (1 message(s) left on that connection: 2 sent, 1 received)"});
}

TEST_CASE("verify_msccl refuses a wrong result, naming the rank, the chunk, what it holds and who wrote it",
          "[msccl]") {
  // Rank 0 sends its i[0] instead of i[1]: rank 1's o[0] gets the wrong chunk.
  const std::string offset = edited(kAlltoall, kA2aGpu0Send, "srcoff=\"1\"", "srcoff=\"0\"");
  refused(offset, Problem::wrong_result,
          {"wrong result: rank 1 chunk o[0] holds {r0.i[0]} instead of {r0.i[1]} (last written by rank 1 thread block 1 "
           "step 1 (cpy, line 19))"});
  // The ring's rank 0 adds its i[2] where i[3] belongs: chunk 2 counts rank 0 twice, chunk 3 misses it.
  const std::string ring = edited(kRing, "<step s=\"1\" type=\"rrs\" srcbuf=\"i\" srcoff=\"3\"", "srcoff=\"3\"", "srcoff=\"2\"");
  refused(ring, Problem::wrong_result, {"wrong result: rank 0 chunk o[3] holds {r0.i[2], r1.i[3], r2.i[3], r3.i[3]} "
                                        "instead of {r0.i[3], r1.i[3], r2.i[3], r3.i[3]} (last written by rank 0 "
                                        "thread block 0 step 5 (rcs, line 9))"});
  // Rank 0 adds its own i[0] again to the finished chunk 0 it receives (rrcs where rcs belongs).
  const std::string twice = edited(kRing, "<step s=\"4\" type=\"rcs\" srcbuf=\"i\" srcoff=\"0\"", "type=\"rcs\"",
                                 "type=\"rrcs\"");
  refused(twice, Problem::wrong_result, {"wrong result: rank 0 chunk o[0] holds {r0.i[0] x2, r1.i[0], r2.i[0], r3.i[0]} "
                                         "instead of {r0.i[0], r1.i[0], r2.i[0], r3.i[0]} (last written by rank 0 thread "
                                         "block 0 step 4 (rrcs, line 8))"});
  // A chunk never written: rank 1 of the reduce-scatter skips its local copy into o[1]... as a nop.
  const std::string skipped = edited(kReduceScatter, "<gpu id=\"1\"", "type=\"cpy\"", "type=\"nop\"");
  refused(skipped, Problem::wrong_result, {"wrong result: rank 1 chunk o[1] holds {r0.i[3]} instead of {r0.i[3], r1.i[3]}"});
}

TEST_CASE("verify_msccl refuses an out-of-place program that writes its input, and chunks past the collective's buffers",
          "[msccl]") {
  const std::string into_input = edited(kAllgather, "<gpu id=\"1\"", "dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"1\"",
                                      "dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"1\"");
  refused(into_input, Problem::wrong_result,
          {"rank 1 thread block 1 step 0 (r, line 21) writes chunk i[0] of the input, which an out-of-place program"});
  // i_chunks="2" lets the parser accept i[1], but an all-gather on 2 ranks with 2 chunks per loop has one input chunk.
  std::string wide = edited(kAllgather, "<gpu id=\"0\"", "i_chunks=\"1\"", "i_chunks=\"2\"");
  wide = edited(wide, "<gpu id=\"0\"", "srcoff=\"0\"", "srcoff=\"1\"");
  refused(wide, Problem::wrong_result,
          {"rank 0 thread block 0 step 0 (s, line 6) touches chunks i[1]..i[1], past the 1 chunk(s) buffer i has"});
}

TEST_CASE("verify_msccl refuses a race between thread blocks that no dependency or message orders", "[msccl]") {
  // Rank 0's copy out of scratch no longer waits for the receive into scratch.
  const std::string xml = edited(kAlltoall, kA2aGpu0Copy, "depid=\"0\" deps=\"1\"", "depid=\"-1\" deps=\"-1\"");
  refused(xml, Problem::race,
          {"race on rank 0: ", "rank 0 thread block 0 step 1 (r, line 5) writes s[0]",
           "rank 0 thread block 1 step 1 (cpy, line 9) reads s[0]", "no dependency or message orders the two"});
  // Two writers of one output chunk: rank 1's receive and copy both write o[0] of the all-gather, unordered,
  // though the run the simulation picks ends with the right value.
  const std::string both = edited(kAllgather, "<gpu id=\"1\"", "type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\"",
                                "type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\"");
  refused(both, Problem::race, {"race on rank 1: ", "writes o[0]"});
  // A message orders them: the all-to-all's copy on rank 1 (after its own receive) is not a race with rank 0's send.
  CHECK(verified(kAlltoall).ok);
}

TEST_CASE("verify_msccl turns a hand-built program it cannot check into a refusal, and never throws on mutated files",
          "[msccl]") {
  msccl::Program broken = parse_msccl(kAlltoall);
  broken.gpus.pop_back();
  Verification result = msccl::verify_msccl(broken);
  CHECK_FALSE(result.ok);
  CHECK(result.problem == Problem::unsupported);
  CHECK_THAT(result.reason, Contains("the program has 1 gpus but ngpus=\"2\""));
  msccl::Program odd = parse_msccl(kAlltoall);
  odd.nchunksperloop = 3;
  CHECK_THAT(msccl::verify_msccl(odd).reason, Contains("nchunksperloop=\"3\" is not a positive multiple of ngpus=\"2\""));
  std::mt19937 random(2626);
  const char alphabet[] = "0123-1sri";
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::string& base = trial % 2 ? kRing : kReduceScatter;
    std::string text = base;
    for (int k = 0; k < 2; ++k) {
      std::size_t at = random() % text.size();
      while (at < text.size() && text[at] != '"') ++at;  // mutate inside an attribute value
      if (at + 1 < text.size()) text[at + 1] = alphabet[random() % (sizeof(alphabet) - 1)];
    }
    msccl::Program program;
    try {
      program = parse_msccl(text);
    } catch (const Error&) {
      continue;
    }
    ++parsed;
    const Verification mutated = msccl::verify_msccl(program);
    CHECK(mutated.ok == mutated.reason.empty());
  }
  CHECK(parsed > 100);
}

}  // namespace test_msccl_verify
