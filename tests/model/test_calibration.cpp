// The alpha-beta fit behind host calibration: it recovers the parameters that generated the
// times, tolerates noise, and refuses measurements that carry no bandwidth.
#include <catch2/catch.hpp>

#include <chorus/algo/build.hpp>
#include <chorus/model/calibration.hpp>
#include <chorus/model/simulate.hpp>

#include <vector>

namespace test_calibration {

using namespace chorus;

namespace {
double model_seconds(int n, std::size_t count, double alpha, double beta, std::size_t slice) {
  algo::Options options;
  options.slice = slice;
  const auto schedule = algo::build(Collective::all_reduce, algo::Pattern::ring, n, count, 0, options);
  return model::simulate_us(schedule, model::uniform_fabric(n, alpha, beta), 4) * 1e-6;
}
}  // namespace

TEST_CASE("two exact samples give back alpha and beta") {
  for (int n : {2, 3, 4, 8}) {
    for (double alpha : {0.0, 0.7, 5.0}) {
      const double beta = 6.5;
      const std::size_t slice = 65536;
      const std::vector<model::Sample> samples{{1024, model_seconds(n, 1024, alpha, beta, slice)},
                                               {1 << 22, model_seconds(n, 1 << 22, alpha, beta, slice)}};
      const model::AlphaBeta fit =
          model::fit_alpha_beta(Collective::all_reduce, algo::Pattern::ring, n, 4, slice, samples);
      INFO("n " << n << " alpha " << alpha);
      CHECK(fit.alpha_us == Approx(alpha).margin(1e-6));
      CHECK(fit.beta_GBps == Approx(beta).epsilon(1e-6));
    }
  }
}

TEST_CASE("noisy samples give parameters close to the truth") {
  const int n = 4;
  std::vector<model::Sample> samples;
  const double noise[] = {1.05, 0.97, 1.02, 0.99};
  const std::size_t counts[] = {256, 4096, 1 << 18, 1 << 22};
  for (int i = 0; i < 4; ++i) samples.push_back({counts[i], model_seconds(n, counts[i], 3.0, 10.0, 0) * noise[i]});
  const model::AlphaBeta fit = model::fit_alpha_beta(Collective::all_reduce, algo::Pattern::ring, n, 4, 0, samples);
  CHECK(fit.alpha_us == Approx(3.0).epsilon(0.1));
  CHECK(fit.beta_GBps == Approx(10.0).epsilon(0.1));
}

TEST_CASE("fit_alpha_beta refuses what cannot be fitted") {
  const auto fit = [](int n, std::vector<model::Sample> samples) {
    return model::fit_alpha_beta(Collective::all_reduce, algo::Pattern::ring, n, 4, 0, samples);
  };
  CHECK_THROWS_WITH(fit(1, {{10, 1e-6}, {1000, 2e-6}}), Catch::Contains("at least 2 ranks"));
  CHECK_THROWS_WITH(fit(4, {{10, 1e-6}}), Catch::Contains("at least 2 samples"));
  CHECK_THROWS_WITH(fit(4, {{10, 1e-6}, {1000, 0.0}}), Catch::Contains("must be positive"));
  // Larger calls measured faster than small ones: no positive bandwidth explains that.
  CHECK_THROWS_WITH(fit(4, {{10, 1e-3}, {1 << 20, 1e-6}}), Catch::Contains("do not grow with size"));
}

}  // namespace test_calibration
