// torch's c10d::Store behind chorus's bootstrap::Store, so shm::Comm finds its peers through the store
// torch.distributed already made (torchrun's TCPStore, prefixed per process group). A store error
// (DistStoreError, a timeout) becomes the chorus::Error bootstrap::Store promises.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chorus/bootstrap/store.hpp>
#include <chorus/core/error.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace chorus_torch {

class StoreBridge final : public chorus::bootstrap::Store {
 public:
  StoreBridge(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), rank_(rank) {}

  void set(const std::string& key, const std::string& value) override {
    guarded("set", key, [&] { store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end())); });
  }
  std::string get(const std::string& key) override {
    std::vector<std::uint8_t> value;
    guarded("get", key, [&] { value = store_->get(key); });
    return std::string(value.begin(), value.end());
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::int64_t sum = 0;
    guarded("add", key, [&] { sum = store_->add(key, delta); });
    return sum;
  }
  void wait(const std::vector<std::string>& keys) override {
    guarded("wait", chorus::bootstrap::detail::printable_keys(keys), [&] { store_->wait(keys); });
  }
  bool check(const std::vector<std::string>& keys) override {
    bool all = false;
    guarded("check", chorus::bootstrap::detail::printable_keys(keys), [&] { all = store_->check(keys); });
    return all;
  }
  std::chrono::milliseconds timeout() const override { return store_->getTimeout(); }

 private:
  template <class Fn>
  void guarded(const char* call, const std::string& key, Fn&& fn) {
    try {
      fn();
    } catch (const c10::DistStoreError& e) {
      throw chorus::make_error(chorus::ErrorCode::timeout, "torch store", chorus::RankName(rank_), call, " of ", key,
                               " failed: ", e.what_without_backtrace());
    } catch (const c10::Error& e) {
      throw chorus::make_error(chorus::ErrorCode::internal, "torch store", chorus::RankName(rank_), call, " of ", key,
                               " failed: ", e.what_without_backtrace());
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
};

}  // namespace chorus_torch
