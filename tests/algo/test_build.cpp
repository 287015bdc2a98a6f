// build(): the table of supported (collective, pattern) pairs, dispatch to the right generator,
// the Algorithm -> Pattern mapping, and errors that name what was asked for.
#include <chorus/algo/build.hpp>

#include "schedule_checks.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace test_build {

using namespace chorus::algo;
using namespace chorus::algo::testing;
using Catch::Matchers::Contains;

namespace {

const std::vector<Collective> kCollectives = {Collective::all_reduce, Collective::reduce_scatter,
                                              Collective::all_gather, Collective::broadcast,
                                              Collective::reduce,     Collective::all_to_all};
const std::vector<Pattern> kPatterns = {Pattern::ring,   Pattern::tree,  Pattern::halving_doubling,
                                        Pattern::one_shot, Pattern::two_shot, Pattern::direct,
                                        Pattern::chain,  Pattern::binomial, Pattern::pairwise};

}  // namespace

TEST_CASE("build serves exactly the supported pairs") {
  int supported = 0;
  for (const Collective collective : kCollectives) {
    for (const Pattern pattern : kPatterns) {
      INFO(to_string(collective) << " " << to_string(pattern));
      if (supports(collective, pattern)) {
        ++supported;
        const Schedule schedule = build(collective, pattern, 5, 11, 2);
        CHECK(schedule.collective == collective);
        CHECK(schedule.pattern == pattern);
        CHECK(schedule.ranks == 5);
        CHECK(schedule.count == 11);
        check_verified(schedule);
      } else {
        try {
          build(collective, pattern, 5, 11, 2);
          FAIL("no error");
        } catch (const chorus::Error& error) {
          CHECK(error.code() == chorus::ErrorCode::unsupported);
          CHECK_THAT(error.what(), Contains(to_string(collective)) && Contains(to_string(pattern)));
        }
      }
    }
  }
  CHECK(supported == 14);
  CHECK(supports(Collective::all_reduce, Pattern::tree));
  CHECK_FALSE(supports(Collective::broadcast, Pattern::ring));
}

TEST_CASE("build passes root and options through") {
  Options options;
  options.in_place = true;
  options.slice = 2;
  const Schedule schedule = build(Collective::reduce, Pattern::binomial, 6, 9, 4, options);
  CHECK(schedule.root == 4);
  CHECK(schedule.in_place);
  check_verified(schedule);
  CHECK_THROWS_AS(build(Collective::broadcast, Pattern::chain, 3, 1, 3), chorus::Error);
  CHECK_THROWS_AS(build(Collective::all_reduce, Pattern::ring, 0, 1, 0), chorus::Error);
}

TEST_CASE("pattern_for maps every fixed Algorithm to its all_reduce pattern") {
  using chorus::Algorithm;
  CHECK(pattern_for(Algorithm::ring) == Pattern::ring);
  CHECK(pattern_for(Algorithm::tree) == Pattern::tree);
  CHECK(pattern_for(Algorithm::halving_doubling) == Pattern::halving_doubling);
  CHECK(pattern_for(Algorithm::one_shot) == Pattern::one_shot);
  CHECK(pattern_for(Algorithm::two_shot) == Pattern::two_shot);
  for (const Algorithm algorithm : {Algorithm::ring, Algorithm::tree, Algorithm::halving_doubling,
                                    Algorithm::one_shot, Algorithm::two_shot}) {
    CHECK(supports(Collective::all_reduce, pattern_for(algorithm)));
  }
  CHECK_THROWS_WITH(pattern_for(Algorithm::automatic), Contains("automatic"));
}

}  // namespace test_build
