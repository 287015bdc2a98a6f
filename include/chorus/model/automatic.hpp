// Algorithm::automatic decided by the cost model: for each call, the algorithm model::choose
// predicts fastest on the fabric the caller describes (for the host backend, the uniform fabric of
// a calibration: docs/cost-model.md). A backend takes it as a plain function
// (host::Team::set_automatic), so the backends do not depend on the model's headers.
//
// Pricing a call builds and replays every candidate schedule (milliseconds for tens of MiB), so
// answers are kept per (collective, count, element size, ranks): a training loop asks about the same
// few sizes every step. Copies share one cache; it is locked, since every rank thread asks, and
// emptied when it holds kMaxEntries answers (a sweep over many sizes must not grow it without bound).
//
// Every rank of a call must get the same answer, or the call fails as a mismatch (the pattern is
// part of what ranks compare). Answers depend only on the arguments and the fabric, so ranks agree
// when they share a tuner (host threads) or build theirs from the same figures (processes).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "../core/algorithm.hpp"
#include "../core/collective.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "fabric.hpp"
#include "predict.hpp"
#include "tuner.hpp"

CHORUS_NAMESPACE_BEGIN namespace model {

class AutomaticTuner {
 public:
  static constexpr std::size_t kMaxEntries = 4096;

  // `fabric_for(ranks)`: the fabric a communicator of that many ranks runs on. `slice_bytes`: the
  // backend's pipelining slice (the host backend's is host::detail::Tuning::kSliceBytes); 0 = unsliced.
  AutomaticTuner(std::function<Fabric(int ranks)> fabric_for, std::size_t slice_bytes)
      : shared_(std::make_shared<Shared>()), slice_bytes_(slice_bytes) {
    if (!fabric_for) throw detail::model_error("AutomaticTuner", "no fabric function given");
    shared_->fabric_for = std::move(fabric_for);
  }

  // The host backend's model: one alpha and one beta for every pair (a calibration's fit).
  static AutomaticTuner uniform(double alpha_us, double beta_GBps, std::size_t slice_bytes) {
    if (!(alpha_us >= 0.0) || !(beta_GBps > 0.0)) {
      throw detail::model_error("AutomaticTuner::uniform", "need alpha >= 0 and beta > 0, got alpha ", alpha_us,
                                " us and beta ", beta_GBps, " GB/s");
    }
    return AutomaticTuner([=](int ranks) { return uniform_fabric(ranks, alpha_us, beta_GBps); }, slice_bytes);
  }

  // The algorithm to run (never automatic), as a backend asks for it.
  Algorithm operator()(Collective collective, std::size_t count, std::size_t element_size, int ranks) const {
    return explain(collective, count, element_size, ranks).algorithm;
  }

  // The answer with its prediction (time, busbw, the pattern and slice it was priced at).
  Choice explain(Collective collective, std::size_t count, std::size_t element_size, int ranks) const {
    if (element_size == 0) throw detail::model_error("AutomaticTuner", "element size must be positive");
    if (ranks < 1) throw detail::model_error("AutomaticTuner", "ranks must be at least 1, got ", ranks);
    const Key key{collective, count, element_size, ranks};
    {
      const std::lock_guard<std::mutex> lock(shared_->mutex);
      const auto found = shared_->answers.find(key);
      if (found != shared_->answers.end()) return found->second;
    }
    // Priced outside the lock: other ranks' cached answers need not wait for it. Two ranks pricing
    // the same new call compute the same answer; the first one stored stays.
    PredictOptions options;
    options.slice = slice_bytes_ / element_size;
    const Choice choice = choose(fabric(ranks), collective, count, element_size, options);
    const std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->answers.size() >= kMaxEntries) shared_->answers.clear();
    return shared_->answers.emplace(key, choice).first->second;
  }

  std::size_t cached_answers() const {
    const std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->answers.size();
  }

 private:
  using Key = std::tuple<Collective, std::size_t, std::size_t, int>;
  struct Shared {
    std::function<Fabric(int)> fabric_for;
    std::mutex mutex;
    std::map<Key, Choice> answers;
    std::map<int, Fabric> fabrics;  // per rank count, built once
  };

  Fabric fabric(int ranks) const {
    {
      const std::lock_guard<std::mutex> lock(shared_->mutex);
      const auto found = shared_->fabrics.find(ranks);
      if (found != shared_->fabrics.end()) return found->second;
    }
    Fabric built = shared_->fabric_for(ranks);
    if (built.ranks != ranks) {
      throw detail::model_error("AutomaticTuner", "the fabric function returned a fabric of ", built.ranks,
                                " ranks when asked for ", ranks);
    }
    const std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->fabrics.emplace(ranks, std::move(built)).first->second;
  }

  std::shared_ptr<Shared> shared_;
  std::size_t slice_bytes_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::model
