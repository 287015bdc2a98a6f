// model::AutomaticTuner: answers what model::choose says on the fabric it was given, keeps them,
// depends on the fabric (so the model, not a fixed table, decides), and refuses bad input.
#include <catch2/catch.hpp>

#include <chorus/model/automatic.hpp>

#include <cstddef>

namespace test_automatic {

using namespace chorus;

namespace {
constexpr std::size_t kHostSlice = 256 * 1024;
}  // namespace

TEST_CASE("the tuner answers model::choose on its fabric, at the backend's slice") {
  const model::AutomaticTuner tuner = model::AutomaticTuner::uniform(2.0, 8.0, kHostSlice);
  for (const int n : {2, 3, 4, 8}) {
    for (const Collective collective : {Collective::all_reduce, Collective::all_gather, Collective::broadcast,
                                        Collective::reduce, Collective::reduce_scatter}) {
      for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{3} << 20}) {
        INFO(to_string(collective) << " " << count << " floats on " << n << " ranks");
        model::PredictOptions options;
        options.slice = kHostSlice / 4;
        const model::Choice expected = model::choose(model::uniform_fabric(n, 2.0, 8.0), collective, count, 4, options);
        const model::Choice got = tuner.explain(collective, count, 4, n);
        CHECK(got.algorithm == expected.algorithm);
        CHECK(got.prediction.time_us == expected.prediction.time_us);
        CHECK(tuner(collective, count, 4, n) == expected.algorithm);
        CHECK(supports(collective, got.algorithm));
      }
    }
  }
}

TEST_CASE("the fabric decides: latency-bound and bandwidth-bound machines get different algorithms") {
  // 8 ranks, 64 MiB all_reduce. All latency: the fewest message rounds win. All bandwidth: an
  // algorithm that moves each byte ~2(n-1)/n times wins over one-shot's n-1 times.
  const std::size_t count = std::size_t{16} << 20;
  const Algorithm latency_bound = model::AutomaticTuner::uniform(1.0e6, 1.0e6, kHostSlice)(Collective::all_reduce, count, 4, 8);
  const Algorithm bandwidth_bound = model::AutomaticTuner::uniform(0.0, 1.0, kHostSlice)(Collective::all_reduce, count, 4, 8);
  CHECK(latency_bound != bandwidth_bound);
  CHECK(bandwidth_bound != Algorithm::one_shot);
  // And on one machine the answer changes with the size: one step for small messages, fewer bytes
  // per rank for large ones (4 ranks, 5 us and 10 GB/s).
  const model::AutomaticTuner tuner = model::AutomaticTuner::uniform(5.0, 10.0, kHostSlice);
  CHECK(tuner(Collective::all_reduce, 16, 4, 4) == Algorithm::one_shot);
  CHECK(tuner(Collective::all_reduce, std::size_t{1} << 24, 4, 4) != Algorithm::one_shot);
}

TEST_CASE("answers are kept per call shape, shared by copies, and bounded") {
  const model::AutomaticTuner tuner = model::AutomaticTuner::uniform(1.0, 10.0, kHostSlice);
  const model::AutomaticTuner copy = tuner;  // a Team holds a copy inside a std::function
  CHECK(tuner.cached_answers() == 0);
  tuner(Collective::all_reduce, 100, 4, 4);
  tuner(Collective::all_reduce, 100, 4, 4);
  CHECK(tuner.cached_answers() == 1);
  copy(Collective::all_reduce, 100, 2, 4);   // another element size is another call
  copy(Collective::all_reduce, 100, 4, 3);   // another rank count too
  CHECK(tuner.cached_answers() == 3);
  for (std::size_t count = 0; count < model::AutomaticTuner::kMaxEntries; ++count) {
    tuner(Collective::broadcast, count, 1, 2);
  }
  CHECK(tuner.cached_answers() <= model::AutomaticTuner::kMaxEntries);
  CHECK(tuner.cached_answers() > 0);
}

TEST_CASE("the tuner refuses bad input with chorus::Error") {
  CHECK_THROWS_WITH(model::AutomaticTuner::uniform(-1.0, 10.0, kHostSlice), Catch::Contains("alpha >= 0"));
  CHECK_THROWS_WITH(model::AutomaticTuner::uniform(1.0, 0.0, kHostSlice), Catch::Contains("beta > 0"));
  CHECK_THROWS_AS(model::AutomaticTuner(nullptr, kHostSlice), Error);
  const model::AutomaticTuner tuner = model::AutomaticTuner::uniform(1.0, 10.0, kHostSlice);
  CHECK_THROWS_WITH(tuner(Collective::all_reduce, 10, 0, 4), Catch::Contains("element size"));
  CHECK_THROWS_WITH(tuner(Collective::all_reduce, 10, 4, 0), Catch::Contains("ranks must be at least 1, got 0"));
  const model::AutomaticTuner wrong([](int ranks) { return model::uniform_fabric(ranks + 1, 1.0, 1.0); }, 0);
  CHECK_THROWS_WITH(wrong(Collective::all_reduce, 10, 4, 4),
                    Catch::Contains("returned a fabric of 5 ranks when asked for 4"));
}

}  // namespace test_automatic
