// Example 09: tensor parallelism splits the weights; a few all-reduces put the answer back together.
//
// A transformer MLP (h -> 4h -> h) and a language-model head (h -> vocabulary, then softmax
// cross-entropy) run on t = 4 host ranks, each holding 1/t of every weight matrix, Megatron's way
// (docs/tensor-parallel.md):
//   MLP          first layer split by output columns, GeLU on the local columns, second layer split
//                by input rows: 1 all-reduce forward (the partial products), 1 backward (dX)
//   output layer split by vocabulary (columns): no communication forward, 1 all-reduce backward (dX)
//   cross-entropy  on the vocabulary-split logits, never gathered: 3 all-reduces of one float per
//                row forward (max, target logit, sum of exp), none backward
// The example runs the same model unsplit on one thread, checks that the losses and the input
// gradient agree, counts the all-reduces each layer makes, and exits non-zero if anything differs.
#include <chorus/host.hpp>
#include <chorus/parallel/column_parallel_linear.hpp>
#include <chorus/parallel/host_gemm.hpp>
#include <chorus/parallel/parallel_mlp.hpp>
#include <chorus/parallel/vocab_parallel_cross_entropy.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

using namespace chorus::parallel;
using chorus::host::Comm;

constexpr int kRanks = 4;
constexpr std::size_t kRows = 6, kHidden = 8, kFfn = 4 * kHidden, kVocab = 16;

std::vector<float> init(std::size_t count, int seed, float scale) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = scale * std::sin(static_cast<float>(seed * 1000 + static_cast<int>(i)) * 0.37f);
  return v;
}
const std::vector<float> kX = init(kRows * kHidden, 1, 1.0f), kW1 = init(kHidden * kFfn, 2, 0.5f), kB1 = init(kFfn, 3, 0.1f),
                         kW2 = init(kFfn * kHidden, 4, 0.3f), kB2 = init(kHidden, 5, 0.1f),
                         kWh = init(kHidden * kVocab, 6, 0.8f), kBh = init(kVocab, 7, 0.1f);
const std::vector<std::int64_t> kTargets = {3, 15, 0, 8, 11, 6};

// host::Comm, counting the all-reduces it passes on. Anything with the communicator contract's
// members is a chorus communicator, so the layers run on it unchanged.
class CountingComm {
 public:
  explicit CountingComm(Comm& inner) : inner_(&inner) {}
  int rank() const { return inner_->rank(); }
  int size() const { return inner_->size(); }
  template <class S, class R, class... A>
  void all_reduce(S send, R recv, std::size_t count, A... rest) {
    ++all_reduces;
    floats += count;
    inner_->all_reduce(send, recv, count, rest...);
  }
  template <class... A> void broadcast(A... a) { ++others, inner_->broadcast(a...); }
  template <class... A> void reduce(A... a) { ++others, inner_->reduce(a...); }
  template <class... A> void all_gather(A... a) { ++others, inner_->all_gather(a...); }
  template <class... A> void reduce_scatter(A... a) { ++others, inner_->reduce_scatter(a...); }
  template <class... A> void all_to_all(A... a) { ++others, inner_->all_to_all(a...); }
  template <class... A> void send(A... a) { ++others, inner_->send(a...); }
  template <class... A> void recv(A... a) { ++others, inner_->recv(a...); }
  void barrier() { inner_->barrier(); }
  void wait() { inner_->wait(); }
  CountingComm split(int color, int key) {
    CountingComm child(*inner_);
    child.owned_ = std::make_shared<Comm>(inner_->split(color, key));
    child.inner_ = child.owned_.get();
    return child;
  }

  int all_reduces = 0, others = 0;
  std::size_t floats = 0;

 private:
  std::shared_ptr<Comm> owned_;
  Comm* inner_;
};
static_assert(chorus::check_communicator<CountingComm>(), "CountingComm keeps the communicator contract");

struct Result {
  std::vector<float> loss, dx;
};

// The unsplit model, written plainly: what the split one must reproduce.
Result unsplit() {
  std::vector<float> pre(kRows * kFfn), act(kRows * kFfn), y(kRows * kHidden), logits(kRows * kVocab);
  gemm(Transpose::no, Transpose::no, kRows, kFfn, kHidden, kX.data(), kW1.data(), 0.0f, pre.data());
  add_bias(pre.data(), kRows, kFfn, kB1.data());
  for (std::size_t i = 0; i < pre.size(); ++i) act[i] = gelu(pre[i]);
  gemm(Transpose::no, Transpose::no, kRows, kHidden, kFfn, act.data(), kW2.data(), 0.0f, y.data());
  add_bias(y.data(), kRows, kHidden, kB2.data());
  gemm(Transpose::no, Transpose::no, kRows, kVocab, kHidden, y.data(), kWh.data(), 0.0f, logits.data());
  add_bias(logits.data(), kRows, kVocab, kBh.data());
  Result out{std::vector<float>(kRows), std::vector<float>(kRows * kHidden)};
  std::vector<float> dlogits(kRows * kVocab), dy(kRows * kHidden), dpre(kRows * kFfn);
  for (std::size_t i = 0; i < kRows; ++i) {  // softmax cross-entropy; d(mean loss) = (softmax - one_hot) / rows
    float max = logits[i * kVocab], sum = 0;
    for (std::size_t j = 0; j < kVocab; ++j) max = std::fmax(max, logits[i * kVocab + j]);
    for (std::size_t j = 0; j < kVocab; ++j) sum += std::exp(logits[i * kVocab + j] - max);
    const auto target = static_cast<std::size_t>(kTargets[i]);
    out.loss[i] = std::log(sum) - (logits[i * kVocab + target] - max);
    for (std::size_t j = 0; j < kVocab; ++j) {
      dlogits[i * kVocab + j] = (std::exp(logits[i * kVocab + j] - max) / sum - (j == target ? 1.0f : 0.0f)) / kRows;
    }
  }
  gemm(Transpose::no, Transpose::yes, kRows, kHidden, kVocab, dlogits.data(), kWh.data(), 0.0f, dy.data());
  gemm(Transpose::no, Transpose::yes, kRows, kFfn, kHidden, dy.data(), kW2.data(), 0.0f, dpre.data());
  for (std::size_t i = 0; i < dpre.size(); ++i) dpre[i] *= gelu_grad(pre[i]);
  gemm(Transpose::no, Transpose::yes, kRows, kHidden, kFfn, dpre.data(), kW1.data(), 0.0f, out.dx.data());
  return out;
}

struct Counts {  // one layer's all-reduces
  int forward = 0, backward = 0;
  std::size_t floats_forward = 0, floats_backward = 0;
};

bool close(const std::vector<float>& a, const std::vector<float>& b) {
  bool same = a.size() == b.size();
  for (std::size_t i = 0; same && i < a.size(); ++i) same = std::fabs(a[i] - b[i]) <= 1e-5f * std::fmax(1.0f, std::fabs(b[i]));
  return same;
}

}  // namespace

int main() {
  Result split;
  Counts mlp_counts, head_counts, loss_counts;
  int other_collectives = 0;
  chorus::host::Team team(kRanks);
  team.run([&](Comm& world) {
    CountingComm tp(world);  // the whole team is one tensor-parallel group
    ParallelMlp<CountingComm> mlp(tp, kHidden, kFfn);
    mlp.load_full(kW1, kB1, kW2, kB2);  // every rank builds the full weights, keeps its slice
    ColumnParallelLinear<CountingComm> head(tp, kHidden, kVocab);  // logits stay split by vocabulary
    head.load_full(kWh, kBh);
    VocabParallelCrossEntropy<CountingComm> cross_entropy(tp, kVocab);

    // Runs one step of a layer; adds the all-reduces it made to `forward` or `backward` of `c`.
    Counts mlp_c, head_c, loss_c;
    auto counted = [&tp](Counts& c, bool forward, auto&& step) {
      tp.all_reduces = 0, tp.floats = 0;
      step();
      (forward ? c.forward : c.backward) = tp.all_reduces;
      (forward ? c.floats_forward : c.floats_backward) = tp.floats;
    };
    ParallelMlp<CountingComm>::Saved mlp_saved;
    VocabParallelCrossEntropy<CountingComm>::Saved loss_saved;
    std::vector<float> y, logits, loss, dlogits, dy, dx;
    counted(mlp_c, true, [&] { y = mlp.forward(kX, mlp_saved); });
    counted(head_c, true, [&] { logits = head.forward(y); });  // [rows x V/t]: this rank's vocabulary
    counted(loss_c, true, [&] { loss = cross_entropy.forward(logits, kTargets, loss_saved); });
    const std::vector<float> mean(kRows, 1.0f / kRows);  // d(mean loss) / d(loss of each row)
    counted(loss_c, false, [&] { dlogits = cross_entropy.backward(loss_saved, mean); });
    counted(head_c, false, [&] { dy = head.backward(y, dlogits); });
    counted(mlp_c, false, [&] { dx = mlp.backward(mlp_saved, dy); });
    if (world.rank() == 0) {
      split = {loss, dx};
      mlp_counts = mlp_c, head_counts = head_c, loss_counts = loss_c;
      other_collectives = tp.others;
    }
  });
  const Result whole = unsplit();

  std::printf("t = %d ranks, %zu rows, hidden %zu, ffn %zu, vocabulary %zu (each rank holds %zu of it)\n\n", kRanks,
              kRows, kHidden, kFfn, kVocab, kVocab / kRanks);
  std::printf("layer                      all-reduces forward       backward\n");
  auto row = [](const char* name, const Counts& c) {
    std::printf("%-26s %d (%3zu floats)          %d (%3zu floats)\n", name, c.forward, c.floats_forward, c.backward,
                c.floats_backward);
  };
  row("MLP (column, GeLU, row)", mlp_counts);
  row("output layer (column)", head_counts);
  row("vocab-parallel CE", loss_counts);
  bool ok = mlp_counts.forward == 1 && mlp_counts.backward == 1 && head_counts.forward == 0 &&
            head_counts.backward == 1 && loss_counts.forward == 3 && loss_counts.backward == 0 &&
            loss_counts.floats_forward == 3 * kRows && other_collectives == 0;
  std::printf("%d other collectives; all-gathering the logits instead would move %zu floats per rank\n\n",
              other_collectives, kRows * kVocab * (kRanks - 1) / kRanks);

  std::printf("row   target   loss on %d ranks   unsplit loss\n", kRanks);
  for (std::size_t i = 0; i < kRows; ++i) {
    std::printf("%3zu   %6lld   %16.6f   %12.6f\n", i, static_cast<long long>(kTargets[i]),
                static_cast<double>(split.loss[i]), static_cast<double>(whole.loss[i]));
  }
  const bool same_loss = close(split.loss, whole.loss), same_dx = close(split.dx, whole.dx);
  std::printf("input gradient dX (%zu floats) %s the unsplit one\n", whole.dx.size(), same_dx ? "equals" : "DIFFERS from");
  ok = ok && same_loss && same_dx;
  std::printf(ok ? "the split model computes the unsplit one, with the all-reduces above\n"
                 : "WRONG: the split model or its communication differs\n");
  return ok ? 0 : 1;
}
