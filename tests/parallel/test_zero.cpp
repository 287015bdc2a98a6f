// ZeRO-1 and the optimizers it shards: SGD with momentum and Adam follow PyTorch's updates, and
// ZeroRedundancyOptimizer leaves the parameters plain data parallelism leaves, on host threads and
// the mailbox fake, with 1/N of the optimizer state and one reduce_scatter + all_gather per step.
#include <catch2/catch.hpp>

#include <chorus/host.hpp>
#include <chorus/parallel/adam.hpp>
#include <chorus/parallel/sgd.hpp>
#include <chorus/parallel/zero_redundancy_optimizer.hpp>

#include "host/harness.hpp"
#include "support/data_parallel_checks.hpp"
#include "support/run_on_every_communicator.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace test_zero {

using chorus::parallel::Adam;
using chorus::parallel::Sgd;

TEST_CASE("Sgd follows torch.optim.SGD: the first step's velocity is the gradient", "[parallel][optimizer]") {
  Sgd sgd(0.1, 0.9, 0.1);
  float p = 1.0f;
  const float g = 0.5f;
  sgd.step(&p, &g, 1);  // d = 0.5 + 0.1 * 1 = 0.6; v = 0.6; p = 1 - 0.06
  CHECK(p == Approx(0.94f));
  sgd.step(&p, &g, 1);  // d = 0.5 + 0.094 = 0.594; v = 0.9 * 0.6 + 0.594 = 1.134; p = 0.94 - 0.1134
  CHECK(p == Approx(0.8266f));
  CHECK(sgd.state_elements() == 1);
  CHECK(Sgd(0.1).state_elements() == 0);  // no momentum, no state
  CHECK_THROWS_AS(sgd.step(&p, &g, 0), chorus::Error);  // the state covers one element
  CHECK_THROWS_AS(Sgd(-0.1), chorus::Error);
}

TEST_CASE("Adam follows torch.optim.Adam's bias-corrected update", "[parallel][optimizer]") {
  Adam adam({0.01, 0.9, 0.999, 1e-8, 0.0});
  float p = 1.0f;
  double m = 0, v = 0, ref = 1.0;
  for (int t = 1; t <= 3; ++t) {
    const float g = t == 2 ? -0.25f : 0.5f;
    adam.step(&p, &g, 1);
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    ref -= 0.01 * (m / (1 - std::pow(0.9, t))) / (std::sqrt(v / (1 - std::pow(0.999, t))) + 1e-8);
    CHECK(p == Approx(ref).epsilon(1e-6));
  }
  CHECK(adam.state_elements() == 2);
  CHECK_THROWS_AS(Adam({0.01, 1.0, 0.999, 1e-8, 0.0}), chorus::Error);
}

TEST_CASE("ZeRO-1 equals plain data parallelism with SGD momentum and with Adam", "[parallel][zero]") {
  // 3: 16 elements do not divide, so the last shard is padded
  support::run_on_every_communicator("ZeRO-1", [](auto& comm) { return dp_checks::check_zero(comm); },
                                     {{1, 2, 3, 4}, {3, 4}});
}

TEST_CASE("ZeroRedundancyOptimizer rejects what it cannot shard", "[parallel][zero]") {
  using chorus::parallel::param_view;
  using Zero = chorus::parallel::ZeroRedundancyOptimizer<chorus::host::Comm, Sgd>;
  chorus::host::Team team(2);
  std::vector<std::string> messages(2);
  harness::run(team, [&](chorus::host::Comm& comm) {
    std::string& seen = messages[static_cast<std::size_t>(comm.rank())];
    auto record = [&](auto body) {
      try {
        body();
        seen += "[no error] ";
      } catch (const chorus::Error& e) {
        seen += std::string(e.what()) + " ";
      }
    };
    std::vector<float> p(4), g(4), short_g(3);
    std::vector<double> wide(4);
    record([&] { Zero zero(comm, {param_view("p", p)}, {}, Sgd(0.1)); });
    record([&] { Zero zero(comm, {param_view("p", p)}, {param_view("g", short_g)}, Sgd(0.1)); });
    record([&] { Zero zero(comm, {param_view("w", wide)}, {param_view("g", wide)}, Sgd(0.1)); });
    chorus::host::Comm none = comm.split(-1, 0);
    record([&] { Zero zero(none, {param_view("p", p)}, {param_view("g", g)}, Sgd(0.1)); });
  });
  for (const std::string& seen : messages) {
    CHECK_THAT(seen, Catch::Matchers::Contains("1 parameters but 0 gradients"));
    CHECK_THAT(seen, Catch::Matchers::Contains("'p' has 4 elements and its gradient 3"));
    CHECK_THAT(seen, Catch::Matchers::Contains("'w' is not float32"));
    CHECK_THAT(seen, Catch::Matchers::Contains("has no ranks"));
    CHECK_THAT(seen, !Catch::Matchers::Contains("[no error]"));
  }
}

}  // namespace test_zero
