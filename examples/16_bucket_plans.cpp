// Example 16: how two bucketing rules pack the gradients of ResNet-50 and GPT-style models (docs/data-parallel.md).
//
// chorus's rule never lets a bucket of several tensors exceed the cap and lets a tensor of at least the cap
// travel alone while the small tensors around it keep filling one bucket; PyTorch's rule adds a tensor and
// closes the bucket once it reaches the cap. For each model this prints, per rule, how many all-reduces a
// step issues, how many of them carry almost nothing, how far the buckets of several tensors go past the
// cap, the largest bucket, and the device memory DeviceGradientReducer holds for each. Exits non-zero if
// chorus's rule breaks its promise (no bucket of several tensors over its cap, no two neighbouring buckets
// of small tensors that would fit the cap together) or the ResNet-50 list is not torchvision's.
#include <chorus/parallel/bucket_plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

using chorus::DataType;
using chorus::parallel::Bucket;
using chorus::parallel::BucketOptions;
using chorus::parallel::BucketPlan;
using chorus::parallel::BucketRule;
using chorus::parallel::TensorSpec;

namespace {

struct Model {
  std::string name;
  std::size_t hidden, layers, vocab = 50304, positions = 2048;
};

// The parameters in registration (forward) order, float32, as a GPT-2/3 block declares them.
std::vector<TensorSpec> parameters(const Model& m) {
  const std::size_t h = m.hidden;
  std::vector<TensorSpec> p;
  auto add = [&](std::size_t count) { p.push_back({DataType::float32, count}); };
  add(m.vocab * h);      // token embedding
  add(m.positions * h);  // position embedding
  for (std::size_t l = 0; l < m.layers; ++l) {
    add(h), add(h);                  // ln1 weight, bias
    add(3 * h * h), add(3 * h);      // qkv weight, bias
    add(h * h), add(h);              // attention projection
    add(h), add(h);                  // ln2
    add(4 * h * h), add(4 * h);      // mlp up
    add(4 * h * h), add(h);          // mlp down
  }
  add(h), add(h);  // final norm
  return p;
}

// ResNet-50 as torchvision registers it (conv weights without bias; each BatchNorm a weight and a bias; the
// downsample 1x1 conv and its norm after a stage's first block's conv3/bn3; fc last): 161 float32 tensors,
// 25,557,032 parameters, the classic DDP benchmark model. Many small norm tensors, no tensor over 25 MiB.
std::vector<TensorSpec> resnet50() {
  std::vector<TensorSpec> p;
  auto add = [&](std::size_t count) { p.push_back({DataType::float32, count}); };
  auto conv_bn = [&](std::size_t out, std::size_t in, std::size_t k) { add(out * in * k * k), add(out), add(out); };
  conv_bn(64, 3, 7);
  std::size_t in = 64;
  const std::size_t planes[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (std::size_t b = 0; b < blocks[stage]; ++b) {
      const std::size_t width = planes[stage], out = 4 * width;
      conv_bn(width, in, 1), conv_bn(width, width, 3), conv_bn(out, width, 1);
      if (b == 0) conv_bn(out, in, 1);  // downsample
      in = out;
    }
  }
  add(1000 * 2048), add(1000);  // fc
  return p;
}

std::size_t total_count(const std::vector<TensorSpec>& tensors) {
  std::size_t count = 0;
  for (const TensorSpec& t : tensors) count += t.count;
  return count;
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / static_cast<double>(BucketOptions::kMiB); }

struct Summary {
  std::size_t buckets = 0, tiny = 0, shared = 0;  // tiny: at most 0.05 MiB; shared: several tensors
  double median_shared_over_cap = 0, max_shared_over_cap = 0;
  double largest_mib = 0;  // the largest bucket of all, alone or shared
};

Summary summarise(const BucketPlan& plan, const BucketOptions& options) {
  Summary s;
  s.buckets = plan.buckets.size();
  std::vector<double> over;
  for (const Bucket& b : plan.buckets) {
    if (mib(b.bytes()) <= 0.05) ++s.tiny;
    s.largest_mib = std::max(s.largest_mib, mib(b.bytes()));
    if (b.tensors.size() > 1) over.push_back(static_cast<double>(b.bytes()) / static_cast<double>(options.bucket_cap_bytes));
  }
  s.shared = over.size();
  if (!over.empty()) {
    std::sort(over.begin(), over.end());
    s.median_shared_over_cap = over[over.size() / 2];
    s.max_shared_over_cap = over.back();
  }
  return s;
}

// chorus's promise, checked on the plan it made (one element type here).
bool keeps_promise(const BucketPlan& plan, const BucketOptions& options) {
  std::vector<const Bucket*> small;  // the buckets of small tensors, in launch order
  for (const Bucket& b : plan.buckets) {
    if (b.tensors.size() > 1 || b.bytes() < options.bucket_cap_bytes) small.push_back(&b);
  }
  for (std::size_t i = 0; i < small.size(); ++i) {
    const std::size_t cap = i == 0 ? options.first_bucket_bytes : options.bucket_cap_bytes;
    if (small[i]->bytes() > cap) return false;
    // The first bucket closed at its own small cap; after it, two neighbours that fit together should be one.
    if (i >= 2 && small[i - 1]->bytes() + small[i]->bytes() <= options.bucket_cap_bytes) return false;
  }
  return true;
}

}  // namespace

int main() {
  struct Named {
    std::string name;
    std::vector<TensorSpec> tensors;
  };
  const std::vector<Named> models = {{"ResNet-50 (161 tensors)", resnet50()},
                                     {"GPT 350M (h 1024, 24 layers)", parameters({"", 1024, 24})},
                                     {"GPT 1.3B (h 2048, 24 layers)", parameters({"", 2048, 24})},
                                     {"GPT 6.7B (h 4096, 32 layers)", parameters({"", 4096, 32})}};
  bool ok = true;
  if (models[0].tensors.size() != 161 || total_count(models[0].tensors) != 25557032) {
    std::printf("the ResNet-50 list is not torchvision's: %zu tensors, %zu parameters\n", models[0].tensors.size(),
                total_count(models[0].tensors));
    ok = false;
  }
  BucketOptions chorus_rule;
  BucketOptions pytorch_rule;
  pytorch_rule.rule = BucketRule::close_after_crossing;
  std::printf("%-30s %-21s %8s %6s %7s %12s %11s %12s\n", "model", "rule", "buckets", "tiny", "shared",
              "median/cap", "max/cap", "largest MiB");
  for (const Named& model : models) {
    for (const BucketOptions* options : {&chorus_rule, &pytorch_rule}) {
      const BucketPlan plan = chorus::parallel::plan_buckets(model.tensors, *options);
      const Summary s = summarise(plan, *options);
      const bool pytorch = options->rule == BucketRule::close_after_crossing;
      std::printf("%-30s %-21s %8zu %6zu %7zu %11.2fx %10.2fx %12.2f\n", model.name.c_str(),
                  pytorch ? "close_after_crossing" : "never_exceed_cap", s.buckets, s.tiny, s.shared,
                  s.median_shared_over_cap, s.max_shared_over_cap, s.largest_mib);
      if (!pytorch && !keeps_promise(plan, *options)) {
        std::printf("  chorus's rule broke its promise on %s\n", model.name.c_str());
        ok = false;
      }
    }
  }
  std::printf("(tiny: buckets of at most 0.05 MiB; shared: buckets of several tensors, their size over the "
              "25 MiB cap; largest: any bucket)\n\n");
  // What DeviceGradientReducer allocates for these plans: every bucket in its wire type, rounded up to 256 B.
  std::printf("%-30s %14s %22s %22s\n", "model", "parameters", "device buckets, fp32", "with fp16/bf16 wire");
  for (const Named& model : models) {
    std::size_t count = 0, wide = 0, narrow = 0;
    for (const Bucket& b : chorus::parallel::plan_buckets(model.tensors, chorus_rule).buckets) {
      count += b.count;
      wide += (b.count * 4 + 255) / 256 * 256;
      narrow += (b.count * 2 + 255) / 256 * 256;
    }
    std::printf("%-30s %14zu %17.2f GiB %17.2f GiB\n", model.name.c_str(), count,
                static_cast<double>(wide) / (1 << 30), static_cast<double>(narrow) / (1 << 30));
  }
  return ok ? 0 : 1;
}
