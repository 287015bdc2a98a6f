// Tensor- and pipeline-parallel checks written once against the communicator contract and run on
// every communicator: host threads, the mailbox fake, MPI processes (one per rank). Each rank calls
// a check with its Comm and gets back the failures it saw as text; the main thread asserts (Catch2
// is not thread-safe). Nothing is shared between ranks: every rank builds the same inputs from
// fixed formulas and computes the unsplit, unpipelined reference itself, so the checks also work
// in separate processes. Any world size works; 4 ranks and more exercise every path.
#pragma once

#include <chorus/core/communicator.hpp>
#include <chorus/core/error.hpp>
#include <chorus/parallel/column_parallel_linear.hpp>
#include <chorus/parallel/parallel_mlp.hpp>
#include <chorus/parallel/pipeline_communication.hpp>
#include <chorus/parallel/pipeline_executor.hpp>
#include <chorus/parallel/pipeline_schedule.hpp>
#include <chorus/parallel/pipeline_simulator.hpp>
#include <chorus/parallel/row_parallel_linear.hpp>
#include <chorus/parallel/vocab_parallel_cross_entropy.hpp>

#include "recording_comm.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mp_checks {

using chorus::detail::concat;
namespace par = chorus::parallel;

// The communicator that records its calls (tests/support/recording_comm.hpp): a check proves how
// many collectives a layer issues.
using support::CallLog;
using support::RecordingComm;

// ---- Plain references, computed the obvious way on every rank.

// Values in [-1, 1], a fixed function of (seed, index): every rank and process builds the same.
inline std::vector<float> values(std::size_t count, unsigned seed, float scale = 1.0f) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto h = static_cast<unsigned>((i * 7919u + seed * 104729u + 17u) % 2001u);
    v[i] = scale * static_cast<float>(static_cast<int>(h) - 1000) / 1000.0f;
  }
  return v;
}

// a [m x k] times b [k x n], summed in double.
inline std::vector<float> mul(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t k,
                              std::size_t n) {
  std::vector<float> c(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::size_t l = 0; l < k; ++l) sum += static_cast<double>(a[i * k + l]) * b[l * n + j];
      c[i * n + j] = static_cast<float>(sum);
    }
  }
  return c;
}

inline std::vector<float> transpose(const std::vector<float>& a, std::size_t rows, std::size_t cols) {
  std::vector<float> t(a.size());
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  }
  return t;
}

inline void add_row(std::vector<float>& y, const std::vector<float>& bias) {
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += bias[i % bias.size()];
}

inline std::vector<float> column_sums(const std::vector<float>& g, std::size_t cols) {
  std::vector<float> sums(cols, 0.0f);
  for (std::size_t i = 0; i < g.size(); ++i) sums[i % cols] += g[i];
  return sums;
}

// Rank r's share of a [rows x cols] matrix split t ways, by columns or by rows.
inline std::vector<float> column_block(const std::vector<float>& full, std::size_t cols, int r, int t) {
  const std::size_t w = cols / static_cast<std::size_t>(t), rows = full.size() / cols;
  std::vector<float> block;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < w; ++j) block.push_back(full[i * cols + static_cast<std::size_t>(r) * w + j]);
  }
  return block;
}
inline std::vector<float> row_block(const std::vector<float>& full, int r, int t) {
  const std::size_t n = full.size() / static_cast<std::size_t>(t);
  return std::vector<float>(full.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)),
                            full.begin() + static_cast<std::ptrdiff_t>(n * (static_cast<std::size_t>(r) + 1)));
}

class Failures {
 public:
  void expect(bool holds, const std::string& what) {
    if (!holds) failures_.push_back(what);
  }
  // Equal to float tolerance: |got - want| <= tol * max(1, |want|) everywhere.
  void close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
    if (got.size() != want.size()) {
      failures_.push_back(concat(what, ": ", got.size(), " floats, expected ", want.size()));
      return;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol * std::max(1.0, std::fabs(static_cast<double>(want[i]))))) {
        failures_.push_back(concat(what, ": element ", i, " is ", got[i], ", expected ", want[i]));
        return;
      }
    }
  }
  std::vector<std::string> take() { return std::move(failures_); }

 private:
  std::vector<std::string> failures_;
};

inline std::string describe(const CallLog& c) {
  const std::size_t all_reduce = c.count("all_reduce"), all_gather = c.count("all_gather");
  const std::size_t reduce_scatter = c.count("reduce_scatter");
  return concat(all_reduce, " all_reduce, ", all_gather, " all_gather, ", reduce_scatter, " reduce_scatter, ",
                c.collectives() - all_reduce - all_gather - reduce_scatter, " other collectives");
}

// ---- Tensor parallel: split layers equal the unsplit layer, with Megatron's collectives.

// Column-parallel linear: output columns split; forward needs no communication (one all_gather
// with gather_output), backward exactly one all_reduce (of dX, rows x in floats).
template <class Comm>
std::vector<std::string> column_parallel_checks(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int t = base.size(), r = base.rank();
  const std::size_t rows = 5, in = 6, out = 2 * static_cast<std::size_t>(t);
  const auto w = values(in * out, 1), b = values(out, 2), x = values(rows * in, 3), dy = values(rows * out, 4);
  std::vector<float> y = mul(x, w, rows, in, out);
  add_row(y, b);
  const auto dx = mul(dy, transpose(w, in, out), rows, out, in);
  const auto dw = mul(transpose(x, rows, in), dy, in, rows, out);
  const auto db = column_sums(dy, out);
  for (bool gather : {false, true}) {
    RecordingComm<Comm> comm(base);
    const CallLog& log = comm.log();
    par::ColumnParallelLinear<RecordingComm<Comm>> layer(comm, in, out, par::ColumnParallelOptions{gather, false});
    layer.load_full(w, b);
    const std::string where = concat("ColumnParallelLinear(gather_output=", gather, ") on rank ", r, " of ", t);
    const auto got_y = layer.forward(x);
    f.expect(log.collectives() == (gather ? 1 : 0) && log.count("all_gather") == (gather ? 1 : 0),
             concat(where, ": forward made ", describe(log), ", expected ", gather ? "one all_gather" : "none"));
    f.close(where + ": output", got_y, gather ? y : column_block(y, out, r, t));
    comm.reset();
    const auto got_dx = layer.backward(x, gather ? dy : column_block(dy, out, r, t));
    f.expect(log.count("all_reduce") == 1 && log.collectives() == 1 && log.elements("all_reduce") == rows * in,
             concat(where, ": backward made ", describe(log), " (", log.elements("all_reduce"),
                    " floats reduced), expected one all_reduce of ", rows * in));
    f.close(where + ": dX", got_dx, dx);
    f.close(where + ": weight grad", layer.weight_grad, column_block(dw, out, r, t));
    f.close(where + ": bias grad", layer.bias_grad, column_block(db, out, r, t));
  }
  return f.take();
}

// Row-parallel linear: input rows split; forward exactly one all_reduce (of Y, rows x out floats)
// with the bias added once after it, backward none (one all_gather of dX without input_is_parallel).
template <class Comm>
std::vector<std::string> row_parallel_checks(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int t = base.size(), r = base.rank();
  const std::size_t rows = 4, in = 3 * static_cast<std::size_t>(t), out = 5;
  const auto w = values(in * out, 5), b = values(out, 6), x = values(rows * in, 7), dy = values(rows * out, 8);
  std::vector<float> y = mul(x, w, rows, in, out);
  add_row(y, b);
  const auto dx = mul(dy, transpose(w, in, out), rows, out, in);
  const auto dw = mul(transpose(x, rows, in), dy, in, rows, out);
  const auto db = column_sums(dy, out);
  for (bool input_is_parallel : {true, false}) {
    RecordingComm<Comm> comm(base);
    const CallLog& log = comm.log();
    par::RowParallelLinear<RecordingComm<Comm>> layer(comm, in, out, par::RowParallelOptions{input_is_parallel, false});
    layer.load_full(w, b);
    const std::string where = concat("RowParallelLinear(input_is_parallel=", input_is_parallel, ") on rank ", r, " of ", t);
    const auto input = input_is_parallel ? column_block(x, in, r, t) : x;
    const auto got_y = layer.forward(input);
    f.expect(log.count("all_reduce") == 1 && log.collectives() == 1 && log.elements("all_reduce") == rows * out,
             concat(where, ": forward made ", describe(log), ", expected one all_reduce of ", rows * out));
    f.close(where + ": output (bias added once)", got_y, y);
    comm.reset();
    const auto got_dx = layer.backward(input, dy);
    f.expect(log.collectives() == (input_is_parallel ? 0 : 1) && log.count("all_reduce") == 0,
             concat(where, ": backward made ", describe(log), ", expected ",
                    input_is_parallel ? "none" : "one all_gather"));
    f.close(where + ": dX", got_dx, input_is_parallel ? column_block(dx, in, r, t) : dx);
    f.close(where + ": weight grad", layer.weight_grad, row_block(dw, r, t));
    f.close(where + ": bias grad", layer.bias_grad, db);
  }
  return f.take();
}

// The unsplit MLP and its gradients.
struct MlpReference {
  std::size_t rows, h, ffn;
  std::vector<float> w1, b1, w2, b2, x, dy;  // inputs
  std::vector<float> y, dx, dw1, db1, dw2, db2;
};

inline MlpReference mlp_reference(std::size_t rows, std::size_t h, std::size_t ffn) {
  MlpReference m{rows, h, ffn, values(h * ffn, 11, 0.5f), values(ffn, 12), values(ffn * h, 13, 0.5f), values(h, 14),
                 values(rows * h, 15), values(rows * h, 16), {}, {}, {}, {}, {}, {}};
  std::vector<float> pre = mul(m.x, m.w1, rows, h, ffn);
  add_row(pre, m.b1);
  std::vector<float> act(pre.size());
  for (std::size_t i = 0; i < pre.size(); ++i) act[i] = par::gelu(pre[i]);
  m.y = mul(act, m.w2, rows, ffn, h);
  add_row(m.y, m.b2);
  std::vector<float> dpre = mul(m.dy, transpose(m.w2, ffn, h), rows, h, ffn);
  for (std::size_t i = 0; i < dpre.size(); ++i) dpre[i] *= par::gelu_grad(pre[i]);
  m.dx = mul(dpre, transpose(m.w1, h, ffn), rows, ffn, h);
  m.dw1 = mul(transpose(m.x, rows, h), dpre, h, rows, ffn);
  m.db1 = column_sums(dpre, ffn);
  m.dw2 = mul(transpose(act, rows, ffn), m.dy, ffn, rows, h);
  m.db2 = column_sums(m.dy, h);
  return m;
}

// Megatron's MLP: exactly one all_reduce in forward and one in backward, each of rows x h floats;
// output, dX and every weight-gradient shard equal the unsplit layer's.
template <class Comm>
std::vector<std::string> mlp_checks(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int t = base.size(), r = base.rank();
  const MlpReference m = mlp_reference(3, 4, 4 * static_cast<std::size_t>(t));
  RecordingComm<Comm> comm(base);
  const CallLog& log = comm.log();
  par::ParallelMlp<RecordingComm<Comm>> mlp(comm, m.h, m.ffn);
  mlp.load_full(m.w1, m.b1, m.w2, m.b2);
  const std::string where = concat("ParallelMlp on rank ", r, " of ", t);
  typename par::ParallelMlp<RecordingComm<Comm>>::Saved saved;
  const auto y = mlp.forward(m.x, saved);
  f.expect(log.count("all_reduce") == 1 && log.collectives() == 1 && log.elements("all_reduce") == m.rows * m.h,
           concat(where, ": forward made ", describe(log), ", expected one all_reduce of ", m.rows * m.h));
  comm.reset();
  const auto dx = mlp.backward(saved, m.dy);
  f.expect(log.count("all_reduce") == 1 && log.collectives() == 1 && log.elements("all_reduce") == m.rows * m.h,
           concat(where, ": backward made ", describe(log), ", expected one all_reduce of ", m.rows * m.h));
  f.close(where + ": output", y, m.y);
  f.close(where + ": dX", dx, m.dx);
  f.close(where + ": fc1 weight grad", mlp.fc1.weight_grad, column_block(m.dw1, m.ffn, r, t));
  f.close(where + ": fc1 bias grad", mlp.fc1.bias_grad, column_block(m.db1, m.ffn, r, t));
  f.close(where + ": fc2 weight grad", mlp.fc2.weight_grad, row_block(m.dw2, r, t));
  f.close(where + ": fc2 bias grad", mlp.fc2.bias_grad, m.db2);
  return f.take();
}

// Sequence-parallel MLP: rows (tokens) split; no all_reduce in the layer: forward one all_gather
// and one reduce_scatter, backward two all_gathers (dY, and the input again for the weight
// gradient) and one reduce_scatter; one all_reduce per step completes the row layer's bias grad.
template <class Comm>
std::vector<std::string> sequence_parallel_mlp_checks(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int t = base.size(), r = base.rank();
  const auto ut = static_cast<std::size_t>(t);
  const MlpReference m = mlp_reference(2 * ut, 4, 4 * ut);
  RecordingComm<Comm> comm(base);
  const CallLog& log = comm.log();
  par::ParallelMlp<RecordingComm<Comm>> mlp(comm, m.h, m.ffn, par::ParallelMlpOptions{true});
  mlp.load_full(m.w1, m.b1, m.w2, m.b2);
  const std::string where = concat("sequence-parallel ParallelMlp on rank ", r, " of ", t);
  typename par::ParallelMlp<RecordingComm<Comm>>::Saved saved;
  const auto y = mlp.forward(row_block(m.x, r, t), saved);
  f.expect(log.count("all_reduce") == 0 && log.count("all_gather") == 1 && log.count("reduce_scatter") == 1 &&
               log.collectives() == 2,
           concat(where, ": forward made ", describe(log), ", expected one all_gather and one reduce_scatter"));
  comm.reset();
  const auto dx = mlp.backward(saved, row_block(m.dy, r, t));
  f.expect(log.count("all_reduce") == 0 && log.count("all_gather") == 2 && log.count("reduce_scatter") == 1 &&
               log.collectives() == 3,
           concat(where, ": backward made ", describe(log), ", expected two all_gathers and one reduce_scatter"));
  comm.reset();
  mlp.sum_sequence_parallel_grads();
  f.expect(log.count("all_reduce") == 1 && log.collectives() == 1,
           concat(where, ": completing the grads made ", describe(log)));
  f.close(where + ": output rows", y, row_block(m.y, r, t));
  f.close(where + ": dX rows", dx, row_block(m.dx, r, t));
  f.close(where + ": fc1 weight grad", mlp.fc1.weight_grad, column_block(m.dw1, m.ffn, r, t));
  f.close(where + ": fc1 bias grad", mlp.fc1.bias_grad, column_block(m.db1, m.ffn, r, t));
  f.close(where + ": fc2 weight grad", mlp.fc2.weight_grad, row_block(m.dw2, r, t));
  f.close(where + ": fc2 bias grad, summed", mlp.fc2.bias_grad, m.db2);
  return f.take();
}

// Runs `fn`, which must throw chorus::Error whose message holds every one of `parts`. Used only
// for errors raised before any communication, identically on every rank.
template <class Fn>
void expect_error(Failures& f, const std::string& what, Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    f.expect(false, what + ": no chorus::Error");
  } catch (const chorus::Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      f.expect(message.find(part) != std::string::npos, concat(what, ": message '", message, "' lacks '", part, "'"));
    }
  }
}

// Bad sizes and options are refused before any communication, naming the call and the value.
template <class Comm>
std::vector<std::string> tensor_parallel_error_checks(Comm& comm) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const auto t = static_cast<std::size_t>(comm.size());
  using Column = par::ColumnParallelLinear<Comm>;
  using Row = par::RowParallelLinear<Comm>;
  expect_error(f, "column out_features 0", [&] { Column(comm, 4, 0); }, {"ColumnParallelLinear", "out_features = 0"});
  if (t > 1) {
    expect_error(f, "column out_features not divisible", [&] { Column(comm, 4, t + 1); },
                 {"ColumnParallelLinear", concat("out_features = ", t + 1), "not divisible"});
    expect_error(f, "row in_features not divisible", [&] { Row(comm, t + 1, 4); },
                 {"RowParallelLinear", concat("in_features = ", t + 1)});
    Row sp(comm, 2 * t, 4, par::RowParallelOptions{true, true});
    expect_error(f, "sequence-parallel rows not divisible", [&] { sp.forward(values((t + 1) * 2, 1)); },
                 {"reduce_scatter_rows", concat("rows = ", t + 1), "not divisible"});
  }
  expect_error(f, "both gather_output and sequence_parallel", [&] { Column(comm, 4, 2 * t, par::ColumnParallelOptions{true, true}); },
               {"gather_output"});
  expect_error(f, "row sequence_parallel without input_is_parallel", [&] { Row(comm, 2 * t, 4, par::RowParallelOptions{false, true}); },
               {"RowParallelLinear", "input_is_parallel"});
  Column column(comm, 4, 2 * t);
  expect_error(f, "column input size", [&] { column.forward(values(7, 1)); }, {"ColumnParallelLinear::forward", "7 floats"});
  expect_error(f, "column output_grad size", [&] { column.backward(values(8, 1), values(5, 2)); },
               {"ColumnParallelLinear::backward", "output_grad has 5 floats", concat("expected ", 4)});
  expect_error(f, "column load_full size", [&] { column.load_full(values(3, 1), values(2 * t, 2)); },
               {"load_full", "full weight has 3 floats"});
  Row row(comm, 2 * t, 4, par::RowParallelOptions{true, false});
  expect_error(f, "row input size", [&] { row.forward(values(3, 1)); }, {"RowParallelLinear::forward", "3 floats"});
  return f.take();
}

// ---- Vocab-parallel cross-entropy: the unsplit softmax cross-entropy from three all-reduces.

// The unsplit softmax cross-entropy of [rows x vocab] logits, in double: every row's loss and
// d(sum_i loss_grad_i loss_i) / d logits = (softmax - one_hot) * loss_grad.
struct CrossEntropyReference {
  std::vector<float> loss, grad;
};

inline CrossEntropyReference cross_entropy_reference(const std::vector<float>& logits,
                                                     const std::vector<std::int64_t>& targets, std::size_t vocab,
                                                     const std::vector<float>& loss_grad) {
  CrossEntropyReference ref{std::vector<float>(targets.size()), std::vector<float>(logits.size())};
  for (std::size_t i = 0; i < targets.size(); ++i) {
    double max = logits[i * vocab];
    for (std::size_t j = 0; j < vocab; ++j) max = std::max(max, static_cast<double>(logits[i * vocab + j]));
    double sum = 0;
    for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(logits[i * vocab + j] - max);
    const auto target = static_cast<std::size_t>(targets[i]);
    ref.loss[i] = static_cast<float>(std::log(sum) - (logits[i * vocab + target] - max));
    for (std::size_t j = 0; j < vocab; ++j) {
      const double softmax = std::exp(logits[i * vocab + j] - max) / sum;
      ref.grad[i * vocab + j] = static_cast<float>((softmax - (j == target ? 1.0 : 0.0)) * loss_grad[i]);
    }
  }
  return ref;
}

// Logits split by vocabulary: the per-row loss equals the unsplit cross-entropy on every rank
// (also with logits shifted by hundreds, where exp without the max would overflow), using exactly
// three all-reduces of rows floats in forward; backward gives this rank's slice of the unsplit
// gradient with no communication at all. Bad input is refused before communicating.
template <class Comm>
std::vector<std::string> vocab_parallel_cross_entropy_checks(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int t = base.size(), r = base.rank();
  const auto ut = static_cast<std::size_t>(t);
  const std::size_t rows = 2 * ut + 3, vocab = 3 * ut, local = 3;
  std::vector<std::int64_t> targets(rows);
  for (std::size_t i = 0; i < rows; ++i) targets[i] = static_cast<std::int64_t>((i * 5 + 1) % vocab);
  targets[rows - 2] = 0;  // both ends of the vocabulary
  targets[rows - 1] = static_cast<std::int64_t>(vocab - 1);
  const auto loss_grad = values(rows, 23);
  using Loss = par::VocabParallelCrossEntropy<RecordingComm<Comm>>;
  for (float shift : {0.0f, 400.0f}) {
    std::vector<float> logits = values(rows * vocab, 21, 3.0f);
    for (std::size_t i = 0; i < logits.size(); ++i) logits[i] += shift * static_cast<float>(1 + i / vocab % 2);
    const CrossEntropyReference want = cross_entropy_reference(logits, targets, vocab, loss_grad);
    RecordingComm<Comm> comm(base);
    const CallLog& log = comm.log();
    Loss loss(comm, vocab);
    const std::string where = concat("VocabParallelCrossEntropy (logits shifted by ", shift, ") on rank ", r, " of ", t);
    f.expect(loss.local_vocab_size() == local && loss.vocab_range().begin == local * static_cast<std::size_t>(r) &&
                 loss.vocab_range().end == local * (static_cast<std::size_t>(r) + 1),
             concat(where, ": holds [", loss.vocab_range().begin, ", ", loss.vocab_range().end, ")"));
    typename Loss::Saved saved;
    const std::vector<float> got = loss.forward(column_block(logits, vocab, r, t), targets, saved);
    bool small = log.calls().size() == 3;
    for (const support::Call& c : log.calls()) small = small && c.name == "all_reduce" && c.count == rows;
    f.expect(small && log.count("all_reduce") == 3,
             concat(where, ": forward made ", describe(log), " (", log.elements("all_reduce"), " floats reduced, ",
                    log.calls().size(), " calls), expected exactly three all_reduces of ", rows, " floats"));
    f.close(where + ": loss", got, want.loss);
    // Every rank holds the same loss, bit for bit.
    std::vector<float> high = got, low = got;
    base.all_reduce(high.data(), high.data(), high.size(), chorus::ReduceOp::max);
    base.all_reduce(low.data(), low.data(), low.size(), chorus::ReduceOp::min);
    f.expect(high == got && low == got, where + ": the ranks' losses differ");
    comm.reset();
    const std::vector<float> grad = loss.backward(saved, loss_grad);
    f.expect(log.calls().empty(), concat(where, ": backward made ", describe(log), ", expected no communication"));
    f.close(where + ": d loss / d logits", grad, column_block(want.grad, vocab, r, t));
  }

  RecordingComm<Comm> comm(base);
  const std::string on = concat("on rank ", r);
  if (t > 1) {
    expect_error(f, "vocab not divisible", [&] { Loss(comm, vocab + 1); },
                 {"VocabParallelCrossEntropy", on, concat("vocab_size = ", vocab + 1), "not divisible"});
  }
  expect_error(f, "vocab 0", [&] { Loss(comm, 0); }, {"VocabParallelCrossEntropy", on, "vocab_size = 0"});
  Loss loss(comm, vocab);
  typename Loss::Saved saved;
  const std::vector<float> logits = values(rows * local, 24);
  for (std::int64_t bad : {static_cast<std::int64_t>(vocab), std::int64_t{-1}}) {
    std::vector<std::int64_t> wrong = targets;
    wrong[2] = bad;
    expect_error(f, concat("target ", bad), [&] { loss.forward(logits, wrong, saved); },
                 {"VocabParallelCrossEntropy::forward", on, concat("target 2 = ", bad), concat("[0, ", vocab, ")")});
  }
  expect_error(f, "logits size", [&] { loss.forward(values(rows * local - 1, 24), targets, saved); },
               {"VocabParallelCrossEntropy::forward", on, concat("logits have ", rows * local - 1, " floats"),
                concat("expected ", rows, " rows")});
  f.expect(comm.log().calls().empty(), concat("VocabParallelCrossEntropy forward errors on rank ", r,
                                              " communicated: ", describe(comm.log())));
  loss.forward(logits, targets, saved);
  comm.reset();
  expect_error(f, "loss_grad size", [&] { loss.backward(saved, values(rows + 1, 25)); },
               {"VocabParallelCrossEntropy::backward", on, concat("loss_grad has ", rows + 1, " floats"),
                concat("expected ", rows)});
  f.expect(comm.log().calls().empty(), concat("VocabParallelCrossEntropy backward error on rank ", r,
                                              " communicated: ", describe(comm.log())));
  return f.take();
}

// ---- Pipeline: pipelined training equals unpipelined gradient accumulation.

// A chain of virtual stages, each x -> tanh(x W_s) on [rows x d]; the last stage's loss is
// 0.5 |y - target|^2 / m summed over microbatches (the mean over microbatches, as Megatron scales).
struct ChainModel {
  int stages;
  int microbatches;
  std::size_t rows = 2, d = 3;
  std::size_t tensor_size() const { return rows * d; }
  std::vector<float> weight(int s) const { return values(d * d, 100 + static_cast<unsigned>(s), 0.8f); }
  std::vector<float> input(int mb) const { return values(tensor_size(), 200 + static_cast<unsigned>(mb)); }
  std::vector<float> target(int mb) const { return values(tensor_size(), 300 + static_cast<unsigned>(mb)); }

  // The same float operations, in the same order, whether pipelined or not.
  std::vector<float> forward(const std::vector<float>& w, const float* x) const {
    std::vector<float> y(tensor_size());
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < d; ++j) {
        float z = 0;
        for (std::size_t l = 0; l < d; ++l) z += x[i * d + l] * w[l * d + j];
        y[i * d + j] = std::tanh(z);
      }
    }
    return y;
  }
  // dz from dy through tanh; then dX = dz W^T; and W's gradient += x^T dz.
  std::vector<float> pre_grad(const std::vector<float>& y, const float* dy) const {
    std::vector<float> dz(tensor_size());
    for (std::size_t i = 0; i < dz.size(); ++i) dz[i] = dy[i] * (1.0f - y[i] * y[i]);
    return dz;
  }
  std::vector<float> input_grad(const std::vector<float>& w, const std::vector<float>& dz) const {
    std::vector<float> dx(tensor_size());
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t l = 0; l < d; ++l) {
        float sum = 0;
        for (std::size_t j = 0; j < d; ++j) sum += dz[i * d + j] * w[l * d + j];
        dx[i * d + l] = sum;
      }
    }
    return dx;
  }
  void add_weight_grad(std::vector<float>& grad, const std::vector<float>& x, const std::vector<float>& dz) const {
    for (std::size_t l = 0; l < d; ++l) {
      for (std::size_t j = 0; j < d; ++j) {
        float sum = 0;
        for (std::size_t i = 0; i < rows; ++i) sum += x[i * d + l] * dz[i * d + j];
        grad[l * d + j] += sum;
      }
    }
  }
  // Loss of one microbatch, and its gradient dL/dy.
  double loss(int mb, const std::vector<float>& y, std::vector<float>& dy) const {
    const std::vector<float> want = target(mb);
    double sum = 0;
    dy.resize(tensor_size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      const float diff = y[i] - want[i];
      sum += 0.5 * static_cast<double>(diff) * diff;
      dy[i] = diff / static_cast<float>(microbatches);
    }
    return sum / microbatches;
  }
};

struct ChainResult {
  double loss = 0;
  std::vector<std::vector<float>> grads;  // per virtual stage
};

// No pipeline: each microbatch through every stage and back, gradients accumulated.
inline ChainResult accumulate_without_pipeline(const ChainModel& model) {
  ChainResult result;
  result.grads.assign(static_cast<std::size_t>(model.stages), std::vector<float>(model.d * model.d, 0.0f));
  for (int mb = 0; mb < model.microbatches; ++mb) {
    std::vector<std::vector<float>> xs = {model.input(mb)};
    for (int s = 0; s < model.stages; ++s) xs.push_back(model.forward(model.weight(s), xs.back().data()));
    std::vector<float> dy;
    result.loss += model.loss(mb, xs.back(), dy);
    for (int s = model.stages - 1; s >= 0; --s) {
      const std::vector<float> dz = model.pre_grad(xs[static_cast<std::size_t>(s) + 1], dy.data());
      model.add_weight_grad(result.grads[static_cast<std::size_t>(s)], xs[static_cast<std::size_t>(s)], dz);
      dy = model.input_grad(model.weight(s), dz);
    }
  }
  return result;
}

// One rank's stages of the chain as run_pipeline callbacks; counts what it holds.
struct ChainStage {
  const ChainModel& model;
  const par::PipelineSchedule& schedule;
  int rank;
  ChainResult result;  // loss: on the rank holding the last stage; grads: per chunk
  struct Kept {
    std::vector<float> x, y, dz;
  };
  std::map<std::pair<int, int>, Kept> kept;  // (chunk, microbatch)
  int held = 0, peak_held = 0;

  ChainStage(const ChainModel& m, const par::PipelineSchedule& s, int r) : model(m), schedule(s), rank(r) {
    result.grads.assign(static_cast<std::size_t>(s.chunks), std::vector<float>(m.d * m.d, 0.0f));
  }
  int stage(int chunk) const { return schedule.virtual_stage(rank, chunk); }

  par::PipelineStageFunctions functions() {
    par::PipelineStageFunctions fns;
    fns.forward = [this](int c, int mb, const float* in, float* out) {
      Kept& k = kept[{c, mb}];
      k.x = in != nullptr ? std::vector<float>(in, in + model.tensor_size()) : model.input(mb);
      k.y = model.forward(model.weight(stage(c)), k.x.data());
      if (out != nullptr) std::copy(k.y.begin(), k.y.end(), out);
      peak_held = std::max(peak_held, ++held);
    };
    auto input_part = [this](int c, int mb, const float* out_grad, float* in_grad) -> Kept& {
      Kept& k = kept.at({c, mb});
      std::vector<float> dy;
      if (out_grad == nullptr) {
        result.loss += model.loss(mb, k.y, dy);
        out_grad = dy.data();
      }
      k.dz = model.pre_grad(k.y, out_grad);
      if (in_grad != nullptr) {
        const std::vector<float> dx = model.input_grad(model.weight(stage(c)), k.dz);
        std::copy(dx.begin(), dx.end(), in_grad);
      }
      return k;
    };
    auto weight_part = [this](int c, int mb) {
      const Kept& k = kept.at({c, mb});
      model.add_weight_grad(result.grads[static_cast<std::size_t>(c)], k.x, k.dz);
      kept.erase({c, mb});
      --held;
    };
    fns.backward = [=](int c, int mb, const float* out_grad, float* in_grad) {
      input_part(c, mb, out_grad, in_grad);
      weight_part(c, mb);
    };
    fns.backward_input = [=](int c, int mb, const float* out_grad, float* in_grad) { input_part(c, mb, out_grad, in_grad); };
    fns.backward_weight = weight_part;
    return fns;
  }
};

struct PipelineCase {
  par::PipelineKind kind;
  int microbatches;  // <= 0: a multiple of the stage count, -microbatches times it
  int chunks;
};

inline std::vector<PipelineCase> pipeline_cases() {
  return {{par::PipelineKind::gpipe, -2, 1},        {par::PipelineKind::one_f_one_b, -2, 1},
          {par::PipelineKind::one_f_one_b, 1, 1},   {par::PipelineKind::interleaved_1f1b, -2, 2},
          {par::PipelineKind::interleaved_1f1b, -1, 3}, {par::PipelineKind::zb_h1, -2, 1},
          {par::PipelineKind::zb_h1, 1, 1}};
}

// For every schedule: loss and every stage's gradient equal unpipelined accumulation; each rank
// holds at most the simulator's peak in-flight microbatches; it sends and receives exactly the
// transfers of with_communication(), and all ranks' sends and receives pair up (2m(pv - 1) each).
template <class Comm>
std::vector<std::string> pipeline_checks(Comm& base) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int p = base.size(), r = base.rank();
  for (const PipelineCase& c : pipeline_cases()) {
    const int m = c.microbatches > 0 ? c.microbatches : -c.microbatches * p;
    const par::PipelineSchedule schedule = par::make_pipeline_schedule(c.kind, p, m, c.chunks);
    const ChainModel model{schedule.virtual_stages(), m};
    const ChainResult want = accumulate_without_pipeline(model);
    ChainStage stage(model, schedule, r);
    RecordingComm<Comm> comm(base);
    const CallLog& log = comm.log();
    par::run_pipeline(comm, schedule, model.tensor_size(), stage.functions());

    const std::string where = concat(par::to_string(c.kind), " p=", p, " m=", m, " v=", c.chunks, " on rank ", r);
    for (int chunk = 0; chunk < schedule.chunks; ++chunk) {
      f.close(concat(where, ": gradient of stage ", schedule.virtual_stage(r, chunk)),
              stage.result.grads[static_cast<std::size_t>(chunk)],
              want.grads[static_cast<std::size_t>(schedule.virtual_stage(r, chunk))], 1e-6);
    }
    if (r == schedule.rank_of(schedule.virtual_stages() - 1)) {
      f.expect(std::fabs(stage.result.loss - want.loss) <= 1e-6 * std::max(1.0, want.loss),
               concat(where, ": loss ", stage.result.loss, ", expected ", want.loss));
    }
    f.expect(stage.kept.empty(), concat(where, ": ", stage.kept.size(), " microbatches never finished"));
    const int peak = par::simulate_pipeline(schedule).peak_in_flight[static_cast<std::size_t>(r)];
    f.expect(stage.peak_held == peak, concat(where, ": held ", stage.peak_held, " microbatches at once, the simulator says ", peak));

    int sends = 0, recvs = 0;
    const par::PipelineSchedule with_transfers = par::with_communication(schedule);
    for (const par::PipelineAction& a : with_transfers.actions[static_cast<std::size_t>(r)]) {
      sends += a.op == par::PipelineOp::send_activation || a.op == par::PipelineOp::send_gradient;
      recvs += a.op == par::PipelineOp::recv_activation || a.op == par::PipelineOp::recv_gradient;
    }
    const int sent = static_cast<int>(log.count("send")), received = static_cast<int>(log.count("recv"));
    f.expect(sent == sends && received == recvs && log.collectives() == 0,
             concat(where, ": ", sent, " sends and ", received, " recvs, ", log.collectives(),
                    " collectives; the schedule has ", sends, " and ", recvs));
    int totals[2] = {sent, received};
    base.all_reduce(totals, totals, 2, chorus::ReduceOp::sum);
    const int transfers = p > 1 ? 2 * m * (schedule.virtual_stages() - 1) : 0;
    f.expect(totals[0] == transfers && totals[1] == transfers,
             concat(where, ": ", totals[0], " sends and ", totals[1], " recvs in all, expected ", transfers, " each"));
  }
  return f.take();
}

// Impossible requests are refused on every rank before any transfer, naming the call and value.
template <class Comm>
std::vector<std::string> pipeline_error_checks(Comm& comm) {
  static_assert(chorus::is_communicator_v<Comm>, "checks run on chorus communicators only");
  Failures f;
  const int p = comm.size();
  const ChainModel model{p, p};
  ChainStage stage(model, par::one_f_one_b_schedule(p, p), comm.rank());
  expect_error(f, "more stages than ranks", [&] {
    par::run_pipeline(comm, par::one_f_one_b_schedule(p + 1, 4), model.tensor_size(), stage.functions());
  }, {"run_pipeline", concat(p + 1, " stages"), concat(p, " ranks")});
  par::PipelineStageFunctions whole_backward_only = stage.functions();
  whole_backward_only.backward_input = nullptr;
  expect_error(f, "zero bubble without backward_input", [&] {
    par::run_pipeline(comm, par::zb_h1_schedule(p, 4), model.tensor_size(), whole_backward_only);
  }, {"run_pipeline", "backward_input"});
  if (p > 1) {
    par::PipelineSchedule deadlocking = par::with_communication(par::one_f_one_b_schedule(p, 4));
    std::reverse(deadlocking.actions[0].begin(), deadlocking.actions[0].end());
    expect_error(f, "transfers out of order", [&] {
      par::run_pipeline(comm, deadlocking, model.tensor_size(), stage.functions());
    }, {"verify_pipeline_communication"});
  }
  expect_error(f, "tensor_size 0", [&] {
    par::run_pipeline(comm, par::interleaved_1f1b_schedule(p, p, 2), 0, stage.functions());
  }, {"run_pipeline", "tensor_size = 0"});
  return f.take();
}

}  // namespace mp_checks
