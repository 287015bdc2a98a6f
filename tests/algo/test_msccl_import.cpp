// parse_msccl reads hand-written MSCCL XML programs (a ring all-reduce, an out-of-place all-gather, an
// all-to-all through scratch, a reduce-scatter on two channels) field by field, and refuses each kind
// of malformed file with a message naming the element and its line. The fixtures are written here, by
// hand, for these tests; the refusals are made by editing one attribute of a valid fixture.
#include <chorus/algo/msccl.hpp>

#include <catch2/catch.hpp>

#include "msccl_fixtures.hpp"

#include <algorithm>
#include <cstddef>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace test_msccl_import {

namespace {

using namespace chorus::algo;
using chorus::Collective;
using chorus::Error;
using chorus::ErrorCode;
using Catch::Matchers::Contains;
using msccl::StepType;

using msccl_fixtures::kAllgather;
using msccl_fixtures::kAlltoall;
using msccl_fixtures::kReduceScatter;
using msccl_fixtures::kRing;

using msccl_fixtures::edit;
using msccl_fixtures::Edited;
using msccl_fixtures::line_at;

std::string refusal(const std::string& xml, ErrorCode code = ErrorCode::invalid_argument) {
  try {
    parse_msccl(xml);
  } catch (const Error& error) {
    CHECK(error.code() == code);
    return error.what();
  }
  FAIL("parse_msccl accepted a malformed program");
  return {};
}

// The refusal names the element, its line, and what is wrong.
void check_refused(const Edited& edited, const std::string& element, const std::string& what) {
  const std::string message = refusal(edited.text);
  INFO(message);
  CHECK_THAT(message, Contains("chorus::algo::parse_msccl: line " + std::to_string(edited.line) + ": "));
  CHECK_THAT(message, Contains(element));
  CHECK_THAT(message, Contains(what));
}

// gpu 0's second thread block and its steps in kAlltoall.
const std::string kA2aTb1 = "<tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\"";
const std::string kA2aStep1 = "<step s=\"1\" type=\"cpy\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\"";
const std::string kA2aStep1Path = "<step s=\"1\"> in <tb id=\"1\"> of <gpu id=\"0\">";

}  // namespace

TEST_CASE("parse_msccl reads a 4-rank in-place ring all-reduce field by field", "[msccl]") {
  const msccl::Program program = parse_msccl(kRing);
  CHECK(program.name == "ring_allreduce_4");
  CHECK(program.proto == msccl::Protocol::simple);
  CHECK(program.ngpus == 4);
  CHECK(program.coll == Collective::all_reduce);
  CHECK(program.coll_name == "allreduce");
  CHECK(program.nchunksperloop == 4);
  CHECK(program.nchannels == 1);
  CHECK(program.inplace);
  CHECK_FALSE(program.outofplace);  // absent: the opposite of inplace
  CHECK(program.redop.empty());
  CHECK(program.min_bytes == 0);
  CHECK(program.max_bytes == 0);
  CHECK(program.line == 1);
  REQUIRE(program.gpus.size() == 4);
  const StepType order[] = {StepType::send,           StepType::recv_reduce_send, StepType::recv_reduce_send,
                            StepType::recv_reduce_copy_send, StepType::recv_copy_send, StepType::recv_copy_send,
                            StepType::recv};
  for (int r = 0; r < 4; ++r) {
    const msccl::Gpu& gpu = program.gpus[r];
    CHECK(gpu.id == r);
    CHECK(gpu.i_chunks == 4);
    CHECK(gpu.o_chunks == 0);
    CHECK(gpu.s_chunks == 0);
    CHECK(gpu.line == 2 + 11 * r);
    REQUIRE(gpu.thread_blocks.size() == 1);
    const msccl::ThreadBlock& tb = gpu.thread_blocks[0];
    CHECK(tb.id == 0);
    CHECK(tb.send == (r + 1) % 4);
    CHECK(tb.recv == (r + 3) % 4);
    CHECK(tb.chan == 0);
    CHECK(tb.line == gpu.line + 1);
    REQUIRE(tb.steps.size() == 7);
    for (int k = 0; k < 7; ++k) {
      const msccl::Step& step = tb.steps[k];
      CHECK(step.s == k);
      CHECK(step.type == order[k]);
      CHECK(step.srcbuf == Buffer::input);
      CHECK(step.dstbuf == Buffer::input);
      CHECK(step.cnt == 1);
      CHECK(step.depid == -1);
      CHECK(step.deps == -1);
      CHECK_FALSE(step.hasdep);
      CHECK(step.line == tb.line + 1 + k);
    }
    CHECK(tb.steps[0].srcoff == r);
    CHECK(tb.steps[1].srcoff == (r + 3) % 4);
    CHECK(tb.steps[3].dstoff == (r + 1) % 4);
    CHECK(tb.steps[6].dstoff == (r + 2) % 4);
  }
}

TEST_CASE("parse_msccl reads an out-of-place all-gather with a nop dependency, after a declaration and a comment",
          "[msccl]") {
  const msccl::Program program = parse_msccl(kAllgather);
  CHECK(program.coll == Collective::all_gather);
  CHECK(program.proto == msccl::Protocol::ll);
  CHECK_FALSE(program.inplace);
  CHECK(program.outofplace);
  CHECK(program.line == 3);
  REQUIRE(program.gpus.size() == 2);
  const msccl::Gpu& gpu1 = program.gpus[1];
  CHECK(gpu1.i_chunks == 1);
  CHECK(gpu1.o_chunks == 2);
  REQUIRE(gpu1.thread_blocks.size() == 3);
  CHECK(gpu1.thread_blocks[0].send == 0);
  CHECK(gpu1.thread_blocks[0].recv == -1);
  CHECK(gpu1.thread_blocks[1].send == -1);
  CHECK(gpu1.thread_blocks[1].recv == 0);
  const msccl::Step& received = gpu1.thread_blocks[1].steps.at(0);
  CHECK(received.type == StepType::recv);
  CHECK(received.dstbuf == Buffer::output);
  CHECK(received.dstoff == 0);
  CHECK(received.hasdep);
  const msccl::Step& nop = gpu1.thread_blocks[2].steps.at(1);
  CHECK(nop.type == StepType::nop);
  CHECK(nop.srcoff == -1);
  CHECK(nop.dstoff == -1);
  CHECK(nop.cnt == 0);
  CHECK(nop.depid == 1);
  CHECK(nop.deps == 0);
}

TEST_CASE("parse_msccl reads an all-to-all through scratch", "[msccl]") {
  const msccl::Program program = parse_msccl(kAlltoall);
  CHECK(program.coll == Collective::all_to_all);
  CHECK(program.outofplace);
  REQUIRE(program.gpus.size() == 2);
  const msccl::Gpu& gpu0 = program.gpus[0];
  CHECK(gpu0.s_chunks == 1);
  CHECK(gpu0.chunks(Buffer::scratch) == 1);
  CHECK(gpu0.chunks(Buffer::input) == 2);
  const msccl::Step& received = gpu0.thread_blocks.at(0).steps.at(1);
  CHECK(received.type == StepType::recv);
  CHECK(received.dstbuf == Buffer::scratch);
  CHECK(received.hasdep);
  const msccl::Step& copied = gpu0.thread_blocks.at(1).steps.at(1);
  CHECK(copied.type == StepType::copy);
  CHECK(copied.srcbuf == Buffer::scratch);
  CHECK(copied.srcoff == 0);
  CHECK(copied.dstbuf == Buffer::output);
  CHECK(copied.dstoff == 1);
  CHECK(copied.depid == 0);
  CHECK(copied.deps == 1);
}

TEST_CASE("parse_msccl reads a reduce-scatter on two channels, with both spellings of the collective", "[msccl]") {
  const msccl::Program program = parse_msccl(kReduceScatter);
  CHECK(program.coll == Collective::reduce_scatter);
  CHECK(program.coll_name == "reducescatter");
  CHECK(program.proto == msccl::Protocol::ll128);
  CHECK(program.nchannels == 2);
  CHECK(program.redop == "sum");
  CHECK(program.max_bytes == 1048576);
  for (const msccl::Gpu& gpu : program.gpus) {
    REQUIRE(gpu.thread_blocks.size() == 2);
    CHECK(gpu.thread_blocks[0].chan == 0);
    CHECK(gpu.thread_blocks[1].chan == 1);
    CHECK(gpu.thread_blocks[1].send == gpu.thread_blocks[0].send);  // same peer, another channel: allowed
    CHECK(gpu.thread_blocks[0].steps.at(1).type == StepType::recv_reduce_copy);
    CHECK(gpu.thread_blocks[1].steps.at(3).type == StepType::reduce);
  }
  CHECK(program.gpus[1].thread_blocks[0].steps[1].srcoff == 2);
  const std::string msccl_tools = edit(kReduceScatter, "<algo", "coll=\"reducescatter\"", "coll=\"reduce_scatter\"").text;
  const msccl::Program spelled = parse_msccl(msccl_tools);
  CHECK(spelled.coll == Collective::reduce_scatter);
  CHECK(spelled.coll_name == "reduce_scatter");
}

TEST_CASE("parse_msccl: the fixtures cover every step type the executor accepts", "[msccl]") {
  std::set<StepType> seen;
  for (const std::string* xml : {&kRing, &kAllgather, &kAlltoall, &kReduceScatter}) {
    for (const msccl::Gpu& gpu : parse_msccl(*xml).gpus) {
      for (const msccl::ThreadBlock& tb : gpu.thread_blocks) {
        for (const msccl::Step& step : tb.steps) seen.insert(step.type);
      }
    }
  }
  CHECK(seen.size() == std::size(msccl::kStepTypes));
  for (StepType type : msccl::kStepTypes) {
    INFO(to_string(type));
    CHECK(seen.count(type) == 1);
  }
}

TEST_CASE("parse_msccl places thread blocks and gpus by id, whatever their order in the file", "[msccl]") {
  // Swap gpu 0's two thread blocks in the text: the program still has them at index == id.
  std::string swapped = kAlltoall;
  const std::size_t first = swapped.find("    <tb id=\"0\" send=\"1\"");
  const std::size_t second = swapped.find("    <tb id=\"1\"", first);
  const std::size_t end = swapped.find("</tb>\n", second) + 6;
  const std::string block0 = swapped.substr(first, second - first);
  const std::string block1 = swapped.substr(second, end - second);
  swapped.replace(first, end - first, block1 + block0);
  const msccl::Program program = parse_msccl(swapped);
  const msccl::Gpu& gpu0 = program.gpus.at(0);
  REQUIRE(gpu0.thread_blocks.size() == 2);
  CHECK(gpu0.thread_blocks[0].id == 0);
  CHECK(gpu0.thread_blocks[0].send == 1);
  CHECK(gpu0.thread_blocks[1].id == 1);
  CHECK(gpu0.thread_blocks[1].line == 3);
}

TEST_CASE("parse_msccl decodes entities and accepts single quotes", "[msccl]") {
  const std::string xml = edit(kAlltoall, "<algo", "name=\"alltoall_scratch\"", "name='a&amp;b &lt;2&gt;'").text;
  CHECK(parse_msccl(xml).name == "a&b <2>");
}

TEST_CASE("parse_msccl refuses a missing required attribute", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, " cnt=\"1\"", ""), kA2aStep1Path, "missing attribute cnt");
  check_refused(edit(kAlltoall, "<algo", " nchunksperloop=\"2\"", ""), "<algo name=\"alltoall_scratch\">",
                "missing attribute nchunksperloop");
  check_refused(edit(kAlltoall, kA2aTb1, " chan=\"0\"", ""), "<tb id=\"1\"> of <gpu id=\"0\">", "missing attribute chan");
  check_refused(edit(kAlltoall, "<gpu id=\"1\"", " s_chunks=\"1\"", ""), "<gpu id=\"1\">", "missing attribute s_chunks");
}

TEST_CASE("parse_msccl refuses an unknown step type", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "type=\"cpy\"", "type=\"copy\""), kA2aStep1Path,
                "unknown step type type=\"copy\"");
}

TEST_CASE("parse_msccl refuses thread-block ids with a gap, and twice the same id", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aTb1, "<tb id=\"1\"", "<tb id=\"2\""), "<tb id=\"2\"> of <gpu id=\"0\">",
                "id 1 is missing");
  check_refused(edit(kAlltoall, kA2aTb1, "<tb id=\"1\"", "<tb id=\"0\""), "<tb id=\"0\"> of <gpu id=\"0\">",
                "a second <tb> with id 0 (the first is on line 3)");
}

TEST_CASE("parse_msccl refuses a gpu id out of range, a duplicate and a missing gpu", "[msccl]") {
  check_refused(edit(kAlltoall, "<gpu id=\"1\"", "<gpu id=\"1\"", "<gpu id=\"2\""), "<gpu id=\"2\">",
                "attribute id=\"2\" is out of range: expected a rank in 0..1");
  check_refused(edit(kRing, "<gpu id=\"3\"", "<gpu id=\"3\"", "<gpu id=\"1\""), "<gpu id=\"1\">",
                "a second <gpu> with id 1 (the first is on line 13)");
  check_refused(edit(kAlltoall, "<algo", "ngpus=\"2\"", "ngpus=\"3\""), "<algo name=\"alltoall_scratch\">",
                "no <gpu> with id 2");
}

TEST_CASE("parse_msccl refuses a peer out of range or on its own gpu", "[msccl]") {
  check_refused(edit(kAlltoall, "<gpu id=\"0\"", "send=\"1\"", "send=\"2\""), "<tb id=\"0\"> of <gpu id=\"0\">",
                "attribute send=\"2\" is out of range: expected a gpu in 0..1, or -1 for none");
  check_refused(edit(kAlltoall, "<gpu id=\"1\"", "recv=\"0\"", "recv=\"-2\""), "<tb id=\"0\"> of <gpu id=\"1\">",
                "attribute recv=\"-2\" is out of range");
  check_refused(edit(kAlltoall, "<gpu id=\"1\"", "recv=\"0\"", "recv=\"1\""), "<tb id=\"0\"> of <gpu id=\"1\">",
                "cannot send to or receive from itself");
  check_refused(edit(kReduceScatter, "<gpu id=\"1\"", "chan=\"1\"", "chan=\"2\""), "<tb id=\"1\"> of <gpu id=\"1\">",
                "attribute chan=\"2\" is out of range: expected a channel in 0..1");
}

TEST_CASE("parse_msccl refuses two thread blocks of one gpu on the same connection", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aTb1, "send=\"-1\"", "send=\"1\""), "<tb id=\"1\"> of <gpu id=\"0\">",
                "sends to gpu 1 on channel 0, as <tb id=\"0\"> on line 3 already does");
  check_refused(edit(kAlltoall, kA2aTb1, "recv=\"-1\"", "recv=\"1\""), "<tb id=\"1\"> of <gpu id=\"0\">",
                "receives from gpu 1 on channel 0, as <tb id=\"0\"> on line 3 already does");
  // The same peers on another channel are another connection (kReduceScatter parses).
}

TEST_CASE("parse_msccl refuses step indices that are not 0..n-1 in order", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "<step s=\"1\"", "<step s=\"2\""), "<step s=\"2\"> in <tb id=\"1\"> of <gpu id=\"0\">",
                "step index s=\"2\" where 1 was expected");
  check_refused(edit(kAlltoall, kA2aTb1, "<step s=\"0\"", "<step s=\"1\""), "<step s=\"1\"> in <tb id=\"1\"> of <gpu id=\"0\">",
                "step index s=\"1\" where 0 was expected");
}

TEST_CASE("parse_msccl refuses a dependency on a thread block or step that does not exist", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "depid=\"0\"", "depid=\"5\""), kA2aStep1Path,
                "depid=\"5\" names a thread block <gpu id=\"0\"> does not have (it has 2)");
  check_refused(edit(kAlltoall, kA2aStep1, "deps=\"1\"", "deps=\"2\""), kA2aStep1Path,
                "deps=\"2\" names a step <tb id=\"0\"> of <gpu id=\"0\"> does not have (it has 2)");
  check_refused(edit(kAlltoall, kA2aStep1, "deps=\"1\"", "deps=\"-1\""), kA2aStep1Path, "depid=\"0\" with deps=\"-1\"");
}

TEST_CASE("parse_msccl refuses a step without a depid after nops with dependencies, as the executor does",
          "[msccl]") {
  // gpu 0's thread block 1 gets a nop that waits for thread block 0's step 0, before its first cpy.
  const std::string nop = "      <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" "
                          "cnt=\"0\" depid=\"0\" deps=\"0\" hasdep=\"0\"/>\n";
  const std::string first_cpy = "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\"";
  const Edited with_nop = edit(kAlltoall, kA2aTb1, first_cpy, nop + "      <step s=\"1\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\"");
  const std::string broken = edit(with_nop.text, kA2aStep1, "<step s=\"1\"", "<step s=\"2\"").text;
  // The cpy right after the nop has depid="-1": refused, naming the cpy and the nop's line.
  check_refused(Edited{broken, with_nop.line + 1}, "<step s=\"1\"> in <tb id=\"1\"> of <gpu id=\"0\">",
                "follows nop steps with dependencies (from line " + std::to_string(with_nop.line) + ") but has depid=\"-1\"");
  // With a dependency of its own it is accepted, and so is a nop without one.
  const std::string own = edit(broken, "<step s=\"1\" type=\"cpy\" srcbuf=\"i\"", "depid=\"-1\" deps=\"-1\"", "depid=\"0\" deps=\"1\"").text;
  const msccl::Program program = parse_msccl(own);
  const msccl::ThreadBlock& tb = program.gpus.at(0).thread_blocks.at(1);
  REQUIRE(tb.steps.size() == 3);
  CHECK(tb.steps[0].type == StepType::nop);
  CHECK(tb.steps[0].depid == 0);
  CHECK(tb.steps[1].depid == 0);
  CHECK(tb.steps[1].deps == 1);
  CHECK_NOTHROW(parse_msccl(edit(broken, "<step s=\"0\" type=\"nop\"", "depid=\"0\" deps=\"0\"", "depid=\"-1\" deps=\"-1\"").text));
}

TEST_CASE("parse_msccl refuses an unknown buffer name", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "srcbuf=\"s\"", "srcbuf=\"scratch\""), kA2aStep1Path,
                "unknown buffer srcbuf=\"scratch\" (expected i, o or s)");
  check_refused(edit(kAllgather, "<gpu id=\"1\"", "dstoff=\"-1\"", "dstoff=\"-1\" dstbuf=\"x\""), "<step>",
                "attribute dstbuf appears twice");
}

TEST_CASE("parse_msccl refuses negative counts and offsets", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "cnt=\"1\"", "cnt=\"-1\""), kA2aStep1Path,
                "attribute cnt=\"-1\" is out of range: expected a chunk count, 0 or more (negative counts are refused)");
  check_refused(edit(kAlltoall, kA2aStep1, "srcoff=\"0\"", "srcoff=\"-2\""), kA2aStep1Path,
                "attribute srcoff=\"-2\" is out of range");
  // -1 marks a side the step does not use; a cpy uses both.
  check_refused(edit(kAlltoall, kA2aStep1, "dstoff=\"1\"", "dstoff=\"-1\""), kA2aStep1Path,
                "negative dstoff=\"-1\", but a cpy step uses its destination");
  check_refused(edit(kAlltoall, "<gpu id=\"1\"", "i_chunks=\"2\"", "i_chunks=\"-2\""), "<gpu id=\"1\">",
                "attribute i_chunks=\"-2\" is out of range");
}

TEST_CASE("parse_msccl refuses offsets past the buffer's chunk count", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "dstoff=\"1\"", "dstoff=\"2\""), kA2aStep1Path,
                "dstoff + cnt = 3 is past the end of buffer o (o_chunks=\"2\" on <gpu id=\"0\">)");
  check_refused(edit(kAlltoall, kA2aStep1, "cnt=\"1\"", "cnt=\"2\""), kA2aStep1Path,
                "srcoff + cnt = 2 is past the end of buffer s (s_chunks=\"1\" on <gpu id=\"0\">)");
  // A receive's src side names the sender's slot: the executor ignores it, and so does the bound.
  CHECK_NOTHROW(parse_msccl(edit(kAlltoall, "<gpu id=\"0\"", "srcoff=\"0\" dstbuf=\"s\"", "srcoff=\"9\" dstbuf=\"s\"").text));
}

TEST_CASE("parse_msccl refuses a send or receive step in a thread block without that peer", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "type=\"cpy\"", "type=\"s\""), kA2aStep1Path,
                "a s step sends, but its thread block has send=\"-1\" (line 7)");
  check_refused(edit(kAlltoall, kA2aStep1, "type=\"cpy\"", "type=\"rrc\""), kA2aStep1Path,
                "a rrc step receives, but its thread block has recv=\"-1\" (line 7)");
}

TEST_CASE("parse_msccl refuses bad header values", "[msccl]") {
  const std::string algo = "<algo name=\"alltoall_scratch\">";
  check_refused(edit(kAlltoall, "<algo", "coll=\"alltoall\"", "coll=\"allscatter\""), algo,
                "unknown collective coll=\"allscatter\"");
  check_refused(edit(kAlltoall, "<algo", "proto=\"Simple\"", "proto=\"simple\""), algo, "unknown protocol proto=\"simple\"");
  check_refused(edit(kAlltoall, "<algo", "inplace=\"0\"", "inplace=\"yes\""), algo, "attribute inplace=\"yes\" is not an integer");
  check_refused(edit(kAlltoall, "<algo", "nchannels=\"1\"", "nchannels=\"0\""), algo, "attribute nchannels=\"0\" is out of range");
  const Edited broadcast = edit(kAlltoall, "<algo", "coll=\"alltoall\"", "coll=\"broadcast\"");
  const std::string message = refusal(broadcast.text, ErrorCode::unsupported);
  CHECK_THAT(message, Contains("line 1: " + algo + ": coll=\"broadcast\" is not imported yet"));
}

TEST_CASE("parse_msccl refuses elements out of place and malformed XML, naming the line", "[msccl]") {
  check_refused(edit(kAlltoall, kA2aStep1, "<step s=\"1\"", "<foo/>\n      <step s=\"1\""), "<foo> inside <tb id=\"1\"> of <gpu id=\"0\">",
                "only <step> elements belong there");
  const std::string renamed = edit(kAlltoall, "</algo>", "</algo>", "</algorithm>").text;
  check_refused(edit(renamed, "<algo ", "<algo ", "<algorithm "), "the root element is <algorithm>", "expected <algo>");
  check_refused(edit(kAlltoall, kA2aTb1, "<tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">", "<tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\"> text"),
                "", "text outside a tag");
  const std::string unclosed = edit(kAlltoall, kA2aTb1, "</tb>", "").text;
  CHECK_THAT(refusal(unclosed), Contains("end tag </gpu> does not match <tb> opened on line 7"));
  CHECK_THAT(refusal(kAlltoall.substr(0, kAlltoall.find(kA2aTb1) - 4)),
             Contains("line 7: end of input inside <gpu> opened on line 2"));
  CHECK_THAT(refusal(""), Contains("no XML element found"));
}

TEST_CASE("parse_msccl throws only chorus::Error on truncated and mutated input", "[msccl]") {
  for (std::size_t length = 0; length < kAllgather.size(); length += 7) {
    try {
      parse_msccl(kAllgather.substr(0, length));
    } catch (const Error&) {
    }
  }
  std::mt19937 random(26);
  const char alphabet[] = "<>/=\"' -0123456789aeiorsx\n&;!?";
  int accepted = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = kAlltoall;
    for (int k = 0; k < 3; ++k) {
      text[random() % text.size()] = alphabet[random() % (sizeof(alphabet) - 1)];
    }
    try {
      parse_msccl(text);
      ++accepted;
    } catch (const Error& error) {
      CHECK_THAT(std::string(error.what()), Contains("chorus::algo::parse_msccl: line "));
    }
  }
  CHECK(accepted < 2000);
}

}  // namespace test_msccl_import
