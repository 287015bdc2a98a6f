// The printer's text is compared verbatim: docs and examples show it, so it must stay stable.
#include <chorus/algo/printer.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

namespace test_printer {

namespace {

using namespace chorus::algo;

Step step_of(Op op, int peer, Span src, Span dst, std::size_t count) {
  Step step;
  step.op = op;
  step.peer = peer;
  step.src = src;
  step.dst = dst;
  step.count = count;
  return step;
}

constexpr Buffer in = Buffer::input;
constexpr Buffer out = Buffer::output;
constexpr Buffer scr = Buffer::scratch;

}  // namespace

TEST_CASE("describe renders each op as sources -> destination", "[printer]") {
  CHECK(describe(step_of(Op::send, 3, {in, 8}, {}, 2)) == "send in[8,10) -> rank 3");
  CHECK(describe(step_of(Op::recv_copy, 0, {}, {out, 0}, 5)) == "recv rank 0 -> out[0,5)");
  CHECK(describe(step_of(Op::recv_reduce, 1, {in, 2}, {scr, 4}, 2)) == "recv+reduce in[2,4) + rank 1 -> scr[4,6)");
  CHECK(describe(step_of(Op::copy, -1, {scr, 0}, {out, 6}, 3)) == "copy scr[0,3) -> out[6,9)");
  CHECK(describe(step_of(Op::reduce, -1, {scr, 1}, {out, 0}, 1)) == "reduce out[0,1) + scr[1,2) -> out[0,1)");
}

TEST_CASE("describe shows empty ranges and survives malformed steps", "[printer]") {
  CHECK(describe(step_of(Op::send, 1, {out, 7}, {}, 0)) == "send out[7,7) -> rank 1");
  CHECK(describe(step_of(static_cast<Op>(7), 1, {}, {}, 0)) == "invalid op 7");
  CHECK(describe(step_of(Op::copy, -1, {static_cast<Buffer>(9), 0}, {out, 0}, 1)) == "copy ?[0,1) -> out[0,1)");
  CHECK(range_text({scr, 3}, 4) == "scr[3,7)");
}

TEST_CASE("summary names collective, pattern, ranks, count and the options that apply", "[printer]") {
  Schedule schedule;
  schedule.ranks = 1;
  schedule.count = 0;
  CHECK(summary(schedule) == "all_reduce ring, 1 rank, count 0");
  schedule.collective = Collective::broadcast;
  schedule.pattern = Pattern::binomial;
  schedule.ranks = 5;
  schedule.count = 13;
  schedule.root = 3;
  schedule.in_place = true;
  CHECK(summary(schedule) == "broadcast binomial, 5 ranks, count 13, root 3, in place");
  schedule.collective = Collective::all_to_all;
  schedule.pattern = Pattern::pairwise;
  schedule.in_place = false;
  schedule.scratch_count = 4;
  CHECK(summary(schedule) == "all_to_all pairwise, 5 ranks, count 13, scratch 4");
}

TEST_CASE("to_table renders a 2-rank ring all_reduce", "[printer]") {
  Schedule schedule;
  schedule.ranks = 2;
  schedule.count = 4;
  schedule.steps = {{step_of(Op::send, 1, {in, 2}, {}, 2), step_of(Op::recv_reduce, 1, {in, 0}, {out, 0}, 2),
                     step_of(Op::send, 1, {out, 0}, {}, 2), step_of(Op::recv_copy, 1, {}, {out, 2}, 2)},
                    {step_of(Op::send, 0, {in, 0}, {}, 2), step_of(Op::recv_reduce, 0, {in, 2}, {out, 2}, 2),
                     step_of(Op::send, 0, {out, 2}, {}, 2), step_of(Op::recv_copy, 0, {}, {out, 0}, 2)}};
  const std::string expected =
      "all_reduce ring, 2 ranks, count 4\n"
      "rank  step  op           peer  src       dst       count\n"
      "   0     0  send            1  in[2,4)   -             2\n"
      "   0     1  recv+reduce     1  in[0,2)   out[0,2)      2\n"
      "   0     2  send            1  out[0,2)  -             2\n"
      "   0     3  recv            1  -         out[2,4)      2\n"
      "   1     0  send            0  in[0,2)   -             2\n"
      "   1     1  recv+reduce     0  in[2,4)   out[2,4)      2\n"
      "   1     2  send            0  out[2,4)  -             2\n"
      "   1     3  recv            0  -         out[0,2)      2\n";
  CHECK(to_table(schedule) == expected);
}

TEST_CASE("to_table widens columns to fit and marks unused fields", "[printer]") {
  Schedule schedule;
  schedule.collective = Collective::reduce;
  schedule.pattern = Pattern::chain;
  schedule.ranks = 12;
  schedule.count = 1000;
  schedule.root = 11;
  schedule.scratch_count = 1000;
  schedule.steps.resize(12);
  schedule.steps[10] = {step_of(Op::recv_reduce, 9, {in, 0}, {scr, 0}, 1000),
                        step_of(Op::send, 11, {scr, 0}, {}, 1000)};
  schedule.steps[11] = {step_of(Op::copy, -1, {in, 0}, {out, 0}, 1000),
                        step_of(Op::reduce, -1, {scr, 0}, {out, 0}, 1000)};
  const std::string expected =
      "reduce chain, 12 ranks, count 1000, root 11, scratch 1000\n"
      "rank  step  op           peer  src          dst          count\n"
      "  10     0  recv+reduce     9  in[0,1000)   scr[0,1000)   1000\n"
      "  10     1  send           11  scr[0,1000)  -             1000\n"
      "  11     0  copy            -  in[0,1000)   out[0,1000)   1000\n"
      "  11     1  reduce          -  scr[0,1000)  out[0,1000)   1000\n";
  CHECK(to_table(schedule) == expected);
}

TEST_CASE("to_table of a schedule without steps is the header alone", "[printer]") {
  Schedule schedule;
  schedule.collective = Collective::all_gather;
  schedule.pattern = Pattern::direct;
  schedule.ranks = 3;
  schedule.steps.resize(3);
  CHECK(to_table(schedule) ==
        "all_gather direct, 3 ranks, count 0\n"
        "rank  step  op  peer  src  dst  count\n");
}

}  // namespace test_printer
