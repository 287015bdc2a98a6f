// Data parallelism: the bucket plan, the gradient reducer (order, overlap, no_sync, compression,
// averaging, errors), broadcast_parameters, local SGD and the learning-rate scaling rule. The
// cross-rank checks (tests/support/data_parallel_checks.hpp) run on host threads and the mailbox fake.
#include <catch2/catch.hpp>

#include <chorus/host.hpp>
#include <chorus/parallel/bucket_plan.hpp>
#include <chorus/parallel/gradient_reducer.hpp>
#include <chorus/parallel/linear_scaling_lr.hpp>

#include "host/harness.hpp"
#include "support/data_parallel_checks.hpp"
#include "support/run_on_every_communicator.hpp"

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace test_data_parallel {

using chorus::DataType;
using chorus::parallel::BucketOptions;
using chorus::parallel::BucketRule;
using chorus::parallel::plan_buckets;
using chorus::parallel::TensorSpec;
using Indices = std::vector<std::size_t>;

namespace {

constexpr std::size_t kMiB = BucketOptions::kMiB;

TensorSpec floats(std::size_t bytes) { return {DataType::float32, bytes / 4}; }

// The rules every plan keeps: each tensor in exactly one bucket, one type per bucket, a bucket of several
// tensors at most the cap (the first bucket of a type: the first cap), offsets packed.
void check_plan_rules(const std::vector<TensorSpec>& tensors, const chorus::parallel::BucketPlan& plan,
                      const BucketOptions& options) {
  std::vector<int> seen(tensors.size(), 0);
  std::map<DataType, int> buckets_of_type;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const auto& bucket = plan.buckets[b];
    INFO("bucket " << b);
    const bool alone = bucket.tensors.size() == 1 && bucket.bytes() >= options.bucket_cap_bytes;
    if (!alone) {  // a tensor of at least the cap travels alone and does not use up the small first cap
      const std::size_t cap = buckets_of_type[bucket.type]++ == 0 ? options.first_bucket_bytes : options.bucket_cap_bytes;
      if (bucket.tensors.size() > 1) CHECK(bucket.bytes() <= cap);  // one tensor over the first cap fills it alone
    }
    std::size_t offset = 0;
    for (std::size_t k = 0; k < bucket.tensors.size(); ++k) {
      const std::size_t t = bucket.tensors[k];
      ++seen[t];
      CHECK(tensors[t].type == bucket.type);
      CHECK(bucket.offsets[k] == offset);
      CHECK(plan.bucket_of[t] == b);
      CHECK(plan.offset_of[t] == offset);
      offset += tensors[t].count;
    }
    CHECK(bucket.count == offset);
  }
  CHECK(seen == std::vector<int>(tensors.size(), 1));
}

// The cross-rank checks run on 1 to 4 host ranks and on 1, 3 and 4 mailbox ranks.
const support::RankCounts kRanks{{1, 2, 3, 4}, {1, 3, 4}};

#define ON_EVERY_COMM(check) support::run_on_every_communicator(#check, [](auto& comm) { return check(comm); }, kRanks)

}  // namespace

TEST_CASE("Buckets follow reverse registration order: a 1 MiB first bucket, 25 MiB after, big tensors alone",
          "[parallel][buckets]") {
  // Registered a (0.5 MiB), b (0.75), c (10), d (30: over the cap), e (0.25).
  const std::vector<TensorSpec> tensors = {floats(kMiB / 2), floats(3 * kMiB / 4), floats(10 * kMiB),
                                           floats(30 * kMiB), floats(kMiB / 4)};
  const auto plan = plan_buckets(tensors);
  REQUIRE(plan.buckets.size() == 3);
  CHECK(plan.buckets[0].tensors == Indices{4});        // e: d would overflow the 1 MiB first bucket
  CHECK(plan.buckets[1].tensors == Indices{3});        // d alone: larger than 25 MiB
  CHECK(plan.buckets[2].tensors == Indices{2, 1, 0});  // c, b, a: 11.25 MiB
  check_plan_rules(tensors, plan, BucketOptions{});
}

TEST_CASE("A bucket closes when it reaches its cap, and the caps are configurable", "[parallel][buckets]") {
  const std::vector<TensorSpec> tensors(10, floats(kMiB / 2));
  const auto plan = plan_buckets(tensors);  // 1 MiB, then 25 MiB for the remaining 4 MiB
  REQUIRE(plan.buckets.size() == 2);
  CHECK(plan.buckets[0].tensors == Indices{9, 8});
  CHECK(plan.buckets[1].tensors == Indices{7, 6, 5, 4, 3, 2, 1, 0});

  BucketOptions small;
  small.first_bucket_bytes = kMiB / 2;
  small.bucket_cap_bytes = kMiB;
  const auto smaller = plan_buckets(tensors, small);
  REQUIRE(smaller.buckets.size() == 6);
  CHECK(smaller.buckets[0].tensors == Indices{9});
  CHECK(smaller.buckets[5].tensors == Indices{0});
  check_plan_rules(tensors, smaller, small);

  BucketOptions none;
  none.first_bucket_bytes = 0;
  none.bucket_cap_bytes = 0;
  CHECK(plan_buckets(tensors, none).buckets.size() == tensors.size());  // cap 0: one bucket per tensor
}

TEST_CASE("A bucket holds one element type; each type's first bucket gets the small cap", "[parallel][buckets]") {
  std::vector<TensorSpec> tensors;
  for (int i = 0; i < 12; ++i) {
    tensors.push_back(i % 3 == 0 ? TensorSpec{DataType::float64, kMiB / 16} : TensorSpec{DataType::float32, kMiB / 8});
  }
  const auto plan = plan_buckets(tensors);
  check_plan_rules(tensors, plan, BucketOptions{});
  // float32: 8 x 0.5 MiB -> {1 MiB}, {3 MiB}; float64: 4 x 0.5 MiB -> {1 MiB}, {1 MiB}.
  REQUIRE(plan.buckets.size() == 4);
  CHECK(plan.buckets[0].tensors == Indices{11, 10});  // launch order: by the first tensor's readiness
  CHECK(plan.buckets[1].tensors == Indices{9, 6});
  CHECK(plan.buckets[2].tensors == Indices{8, 7, 5, 4, 2, 1});
  CHECK(plan.buckets[3].tensors == Indices{3, 0});
}

TEST_CASE("Small tensors between big ones share a bucket; PyTorch's rule puts each with the next big one",
          "[parallel][buckets]") {
  // One transformer block's shape at hidden size 4096: norms and biases (16 KiB) between weight matrices
  // (64 MiB, over the 25 MiB cap). Registered n0 W1 b1 W2 b2; ready in reverse: b2 W2 b1 W1 n0.
  const std::vector<TensorSpec> tensors = {floats(16 * 1024), floats(64 * kMiB), floats(16 * 1024), floats(64 * kMiB),
                                           floats(16 * 1024)};
  const auto plan = plan_buckets(tensors);
  REQUIRE(plan.buckets.size() == 3);
  CHECK(plan.buckets[0].tensors == Indices{3});        // W2 alone, launched as soon as it is ready
  CHECK(plan.buckets[1].tensors == Indices{1});        // W1 alone
  CHECK(plan.buckets[2].tensors == Indices{4, 2, 0});  // b2 b1 n0 together, launched when n0 is ready
  check_plan_rules(tensors, plan, BucketOptions{});

  BucketOptions pytorch;
  pytorch.rule = BucketRule::close_after_crossing;
  const auto crossing = plan_buckets(tensors, pytorch);
  REQUIRE(crossing.buckets.size() == 3);
  CHECK(crossing.buckets[0].tensors == Indices{4, 3});  // b2, then W2 crosses the 1 MiB first cap
  CHECK(crossing.buckets[1].tensors == Indices{2, 1});  // b1, then W1 crosses 25 MiB
  CHECK(crossing.buckets[2].tensors == Indices{0});     // n0: what is left
  CHECK(crossing.buckets[0].bytes() > pytorch.first_bucket_bytes);
}

TEST_CASE("PyTorch's rule: add, then close at or past the cap; ordered by the first tensor", "[parallel][buckets]") {
  // The order given is the order compute_bucket_assignment_by_size receives the tensors in.
  BucketOptions pytorch;
  pytorch.rule = BucketRule::close_after_crossing;
  const std::vector<TensorSpec> tensors = {floats(3 * kMiB / 4), floats(3 * kMiB / 4), floats(30 * kMiB),
                                           floats(kMiB / 2), floats(20 * kMiB), floats(10 * kMiB)};
  const auto crossing = plan_buckets(tensors, pytorch, {0, 1, 2, 3, 4, 5});
  REQUIRE(crossing.buckets.size() == 3);
  CHECK(crossing.buckets[0].tensors == Indices{0, 1});  // 1.5 MiB: crossed the first cap
  CHECK(crossing.buckets[1].tensors == Indices{2});     // 30 MiB reaches 25 at once
  CHECK(crossing.buckets[2].tensors == Indices{3, 4, 5});  // 0.5 + 20 + 10: crossed 25 with the last
  // chorus's rule on the same order: 0 alone under the first cap, 30 MiB alone, then 1 3 4 (21.25 MiB)
  // and 5 on its own because 1 3 4 5 would pass 25 MiB.
  const auto never = plan_buckets(tensors, {}, {0, 1, 2, 3, 4, 5});
  REQUIRE(never.buckets.size() == 4);
  CHECK(never.buckets[0].tensors == Indices{0});
  CHECK(never.buckets[1].tensors == Indices{2});
  CHECK(never.buckets[2].tensors == Indices{1, 3, 4});
  CHECK(never.buckets[3].tensors == Indices{5});
  check_plan_rules(tensors, never, BucketOptions{});
}

TEST_CASE("PyTorch's rule with several element types: a cap sequence per type, sorted by smallest index",
          "[parallel][buckets]") {
  // DDP's first call, _compute_bucket_assignment_by_size(params, [1 MiB, 25 MiB]): tensors in registration
  // order, one open bucket and one cap iterator per type (BucketKey), a bucket closes once its size is >= the
  // type's current cap and that type's iterator moves to 25 MiB; the leftovers are appended, then every bucket
  // is sorted by its smallest index. Worked by hand from that algorithm:
  //   0 f32 0.5   open f32 {0} 0.5
  //   1 f64 0.75  open f64 {1} 0.75
  //   2 f32 0.5   f32 {0,2} = 1 >= 1: close; f32 cap -> 25
  //   3 f64 0.5   f64 {1,3} = 1.25 >= 1: close; f64 cap -> 25
  //   4 f32 10    open f32 {4} 10
  //   5 f16 2     f16 {5} = 2 >= 1 (f16's first cap): close; f16 cap -> 25
  //   6 f64 24    open f64 {6} 24
  //   7 f32 15    f32 {4,7} = 25 >= 25: close
  //   8 f64 1     f64 {6,8} = 25 >= 25: close
  //   9 f16 0.5   open f16 {9}
  //  10 f32 0.25  open f32 {10}
  // closed {0,2} {1,3} {5} {4,7} {6,8}, leftovers {9} {10}; by smallest index:
  //   {0,2} {1,3} {4,7} {5} {6,8} {9} {10}
  auto mib = [](DataType type, double m) {
    return TensorSpec{type, static_cast<std::size_t>(m * kMiB) / chorus::size_of(type)};
  };
  const DataType f32 = DataType::float32, f64 = DataType::float64, f16 = DataType::float16;
  const std::vector<TensorSpec> tensors = {mib(f32, 0.5), mib(f64, 0.75), mib(f32, 0.5),  mib(f64, 0.5),
                                           mib(f32, 10),  mib(f16, 2),    mib(f64, 24),   mib(f32, 15),
                                           mib(f64, 1),   mib(f16, 0.5),  mib(f32, 0.25)};
  BucketOptions pytorch;
  pytorch.rule = BucketRule::close_after_crossing;
  const auto plan = plan_buckets(tensors, pytorch, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  std::vector<Indices> got;
  for (const auto& bucket : plan.buckets) got.push_back(bucket.tensors);
  CHECK(got == std::vector<Indices>{{0, 2}, {1, 3}, {4, 7}, {5}, {6, 8}, {9}, {10}});
  CHECK(plan.buckets[2].bytes() == 25 * kMiB);  // reaching the cap exactly closes the bucket
  CHECK(plan.buckets[3].type == f16);
  CHECK(plan.bucket_of[7] == 2);
  CHECK(plan.offset_of[7] == 10 * kMiB / 4);  // after tensor 4's 10 MiB of float32
}

TEST_CASE("chorus's rule on random lists: after each type's first bucket, no two neighbours would fit one cap",
          "[parallel][buckets]") {
  // Tensor sizes spread over 1 KiB .. 64 MiB (so some travel alone), one to three element types. Per type, the
  // buckets of small tensors come in packing order (by their last tensor's readiness); a bucket closed only
  // because the next tensor would overflow it, so it and the next one together exceed the cap. The first
  // closed at the 1 MiB first cap and is exempt.
  std::mt19937_64 random(2026);
  const DataType types[] = {DataType::float32, DataType::float16, DataType::float64};
  for (int list = 0; list < 300; ++list) {
    INFO("list " << list);
    const std::size_t n = 1 + random() % 60, kinds = 1 + random() % 3;
    std::vector<TensorSpec> tensors;
    for (std::size_t i = 0; i < n; ++i) {
      const DataType type = types[random() % kinds];
      const double bytes = std::pow(2.0, 10 + static_cast<double>(random() % 1600) / 100);  // 2^10 .. 2^26
      tensors.push_back({type, static_cast<std::size_t>(bytes) / chorus::size_of(type)});
    }
    const BucketOptions options;
    const auto plan = plan_buckets(tensors, options);
    check_plan_rules(tensors, plan, options);
    std::map<DataType, std::vector<std::size_t>> small;  // bytes of each type's buckets of small tensors
    for (const auto& bucket : plan.buckets) {
      if (bucket.tensors.size() > 1 || bucket.bytes() < options.bucket_cap_bytes) small[bucket.type].push_back(bucket.bytes());
    }
    for (const auto& [type, sizes] : small) {
      for (std::size_t k = 2; k < sizes.size(); ++k) {
        INFO(chorus::to_string(type) << " buckets " << k - 1 << " and " << k << ": " << sizes[k - 1] << " + " << sizes[k]);
        CHECK(sizes[k - 1] + sizes[k] > options.bucket_cap_bytes);
      }
    }
  }
}

TEST_CASE("The plan takes an observed ready order, and rejects one that is not a permutation", "[parallel][buckets]") {
  const std::vector<TensorSpec> tensors(4, floats(kMiB / 2));
  const auto plan = plan_buckets(tensors, {}, {1, 0, 3, 2});
  REQUIRE(plan.buckets.size() == 2);
  CHECK(plan.buckets[0].tensors == Indices{1, 0});
  CHECK(plan.buckets[1].tensors == Indices{3, 2});
  CHECK_THROWS_AS(plan_buckets(tensors, {}, {0, 1, 2}), chorus::Error);
  CHECK_THROWS_WITH(plan_buckets(tensors, {}, {0, 1, 1, 2}), Catch::Matchers::Contains("out of range or repeated"));
}

TEST_CASE("Data parallel over N ranks x batch B equals one rank with batch N*B", "[parallel][data_parallel]") {
  ON_EVERY_COMM(dp_checks::check_dp_equals_large_batch);
}

TEST_CASE("Buckets all-reduce as soon as they are full, always in bucket order", "[parallel][data_parallel]") {
  ON_EVERY_COMM(dp_checks::check_bucket_launch_order);
}

TEST_CASE("no_sync accumulates locally: one all-reduce per bucket per optimizer step", "[parallel][data_parallel]") {
  ON_EVERY_COMM(dp_checks::check_no_sync);
}

TEST_CASE("fp16 and bf16 compression send 16-bit buckets and return the averages", "[parallel][data_parallel]") {
  ON_EVERY_COMM(dp_checks::check_compression);
}

TEST_CASE("Bad reducer and broadcast input gives chorus::Error on every rank", "[parallel][data_parallel]") {
  ON_EVERY_COMM(dp_checks::check_reducer_errors);
}

TEST_CASE("An error on the communication thread reaches finish()", "[parallel][data_parallel]") {
  ON_EVERY_COMM(dp_checks::check_comm_thread_error);
}

TEST_CASE("Local SGD averages parameters every period steps", "[parallel][local_sgd]") {
  ON_EVERY_COMM(dp_checks::check_local_sgd);
}

TEST_CASE("A rank that fails releases its peers' communication threads with an error", "[parallel][data_parallel][host]") {
  chorus::host::Team team(2);
  std::string seen_by_rank0;
  std::atomic<bool> all_reduce_started{false};  // rank 1 fails once rank 0's bucket is on its way
  CHECK_THROWS_WITH(harness::run(team, [&](chorus::host::Comm& comm) {
                      std::vector<float> g(8, 1.0f);
                      chorus::parallel::GradientReducer<chorus::host::Comm> reducer(
                          comm, {chorus::parallel::param_view("g", g)});
                      if (comm.rank() == 1) {
                        dp_checks::eventually([&] { return all_reduce_started.load(); });
                        throw std::runtime_error("rank 1 fails mid-backward");
                      }
                      reducer.mark_ready(0);
                      all_reduce_started = true;
                      try {
                        reducer.finish();
                      } catch (const chorus::Error& e) {
                        seen_by_rank0 = e.what();
                      }
                    }),
                    "rank 1 fails mid-backward");
  CHECK_THAT(seen_by_rank0, Catch::Matchers::Contains("rank 1"));
}

TEST_CASE("Data-parallel primitives refuse a communicator of no ranks", "[parallel][data_parallel][host]") {
  chorus::host::Team team(2);
  std::vector<std::string> messages;
  std::mutex mutex;
  harness::run(team, [&](chorus::host::Comm& comm) {
    chorus::host::Comm none = comm.split(-1, 0);
    std::vector<float> g(4);
    const std::vector<chorus::parallel::ParamView> views = {chorus::parallel::param_view("g", g)};
    auto record = [&](auto body) {
      try {
        body();
      } catch (const chorus::Error& e) {
        std::lock_guard<std::mutex> lock(mutex);
        messages.push_back(e.what());
      }
    };
    record([&] { chorus::parallel::GradientReducer<chorus::host::Comm> reducer(none, views); });
    record([&] { chorus::parallel::broadcast_parameters(none, views); });
    record([&] { chorus::parallel::LocalSgd<chorus::host::Comm> local(none, views, 1); });
    record([&] { chorus::parallel::average_parameters(none, views); });
  });
  REQUIRE(messages.size() == 8);
  for (const std::string& message : messages) CHECK_THAT(message, Catch::Matchers::Contains("has no ranks"));
}

TEST_CASE("The linear scaling rule with gradual warmup (Goyal et al. 2017)", "[parallel][lr]") {
  using chorus::parallel::LinearScalingLr;
  // Their reference: 0.1 per 256 images; batch 8192 (k = 32) reaches 3.2 after 5 epochs of warmup.
  const auto lr = LinearScalingLr::with_warmup_epochs(0.1, 256, 8192, 5, 100);
  CHECK(lr.target_lr() == Approx(3.2));
  CHECK(lr.warmup_steps() == 500);
  CHECK(lr.lr(0) == Approx(0.1));
  CHECK(lr.lr(250) == Approx(0.1 + (3.2 - 0.1) / 2));
  CHECK(lr.lr(499) == Approx(0.1 + (3.2 - 0.1) * 499 / 500));
  CHECK(lr.lr(500) == Approx(3.2));
  CHECK(lr.lr(100000) == Approx(3.2));
  CHECK(LinearScalingLr(0.1, 256, 1024).lr(0) == Approx(0.4));  // no warmup: the scaled rate at once
  CHECK_THROWS_AS(LinearScalingLr(0.1, 0, 1024), chorus::Error);
  CHECK_THROWS_AS(LinearScalingLr(-1, 256, 1024), chorus::Error);
  CHECK(LinearScalingLr::with_warmup_epochs(0.1, 256, 1024, 0, 100).warmup_steps() == 0);
  CHECK(LinearScalingLr::with_warmup_epochs(0.1, 256, 1024, 0.5, 3).warmup_steps() == 1);  // rounded down
  // Epoch counts with no step count: refused, not cast (undefined behaviour).
  // The message names the call and the value given.
  const std::vector<std::pair<double, std::string>> refused = {
      {-1.0, "warmup_epochs -1 x"}, {-0.5, "warmup_epochs -0.5 x"}, {std::nan(""), "warmup_epochs nan x"},
      {std::numeric_limits<double>::infinity(), "warmup_epochs inf x"}, {1e30, "warmup_epochs 1e+30 x"},
      {1.9e17, "warmup_epochs 1.9e+17 x steps_per_epoch 100"}};  // 1.9e19 steps: past 2^64 (1.8447e19)
  for (const auto& [epochs, text] : refused) {
    INFO(epochs);
    CHECK_THROWS_WITH(LinearScalingLr::with_warmup_epochs(0.1, 256, 1024, epochs, 100),
                      Catch::Matchers::Contains("chorus::parallel::LinearScalingLr::with_warmup_epochs: " + text));
  }
  // Just under 2^64 steps is a count, and is kept exactly (1.8e19 is a double holding an integer).
  CHECK(LinearScalingLr::with_warmup_epochs(0.1, 256, 1024, 1.8e17, 100).warmup_steps() ==
        std::uint64_t{18000000000000000000u});
}

}  // namespace test_data_parallel

#undef ON_EVERY_COMM
