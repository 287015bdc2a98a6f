// Point-to-point transfers (kernel/p2p.hpp) and the pairwise all_to_all built on them, on the CPU twin:
// ring exchanges, pipelines, all pairs and local copies for 2..8 ranks, counts from 0 to many FIFO slots
// (and not whole 16-byte packs), several element types, transfers sharing a pair's FIFO in list order,
// calls across the 32-bit counter wrap, seeded delays, a rank that skips the call (bounded waits, the
// record names who waited for whom) and refused input.
#include <catch2/catch.hpp>

#include "../support/sanitizers.hpp"
#include "twin_checks.hpp"

#include <chorus/cuda/transfer.hpp>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace test_twin_p2p {

using namespace twin_checks;
using chorus::Collective;
using chorus::ErrorCode;
using chorus::cuda::Transfer;
using chorus::cuda::twin::Options;
using chorus::cuda::twin::Team;

namespace {

// Small FIFO slots and 2 or 4 slots per block (a power of two: the slot index must run on across the
// counters' 32-bit wrap), so a few thousand elements take many slot reuses.
Options small_fifo(int blocks, std::uint32_t delay_seed = 0) {
  Options options;
  options.blocks = blocks;
  options.threads = 3;
  options.staging_bytes = 8192;
  options.ll_bytes = 2048;
  options.fifo_slot_bytes = 48;
  options.fifo_depth = 2 + 2 * (blocks % 2);
  options.delay_seed = delay_seed;
  return options;
}

template <class T>
T value_of(std::size_t transfer, std::size_t i) {
  return static_cast<T>((transfer * 131 + i * 7) % 113) - static_cast<T>(50);
}
template <class T>
T sentinel() {
  return static_cast<T>(99);
}

// Every transfer's send buffer filled with its own pattern, each recv buffer with a sentinel; both one
// element longer than the transfer (the guard must stay untouched) and starting one element into their
// vector, so pointers are not 16-byte aligned.
template <class T>
struct Buffers {
  std::vector<std::vector<T>> sends;
  std::vector<std::vector<T>> recvs;
  std::vector<Transfer<T>> transfers;

  Buffers(const std::vector<std::pair<int, int>>& pairs, const std::vector<std::size_t>& counts) {
    for (std::size_t t = 0; t < pairs.size(); ++t) {
      sends.emplace_back(counts[t] + 2);
      for (std::size_t i = 0; i < counts[t]; ++i) sends.back()[i + 1] = value_of<T>(t, i);
      recvs.emplace_back(counts[t] + 2, sentinel<T>());
    }
    for (std::size_t t = 0; t < pairs.size(); ++t) {
      transfers.push_back(Transfer<T>{pairs[t].first, pairs[t].second, sends[t].data() + 1, recvs[t].data() + 1, counts[t]});
    }
  }
  void reset() {
    for (auto& recv : recvs) recv.assign(recv.size(), sentinel<T>());
  }
  // The first transfer whose recv differs from what was sent, or whose guards were written; -1: none.
  long first_wrong() const {
    for (std::size_t t = 0; t < transfers.size(); ++t) {
      const std::vector<T>& recv = recvs[t];
      if (recv.front() != sentinel<T>() || recv.back() != sentinel<T>()) return static_cast<long>(t);
      for (std::size_t i = 0; i < transfers[t].count; ++i) {
        if (recv[i + 1] != value_of<T>(t, i)) return static_cast<long>(t);
      }
    }
    return -1;
  }
};

std::vector<std::pair<int, int>> ring_exchange(int n) {  // every rank sends to the next, receives from the previous
  std::vector<std::pair<int, int>> pairs;
  for (int r = 0; r < n; ++r) pairs.emplace_back(r, (r + 1) % n);
  return pairs;
}
std::vector<std::pair<int, int>> pipeline(int n) {  // i -> i+1 only: the last rank sends nothing, the first receives nothing
  std::vector<std::pair<int, int>> pairs;
  for (int r = 0; r + 1 < n; ++r) pairs.emplace_back(r, r + 1);
  return pairs;
}
std::vector<std::pair<int, int>> all_pairs(int n) {  // every ordered pair, a local copy included
  std::vector<std::pair<int, int>> pairs;
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) pairs.emplace_back(from, to);
  }
  return pairs;
}

template <class T>
void check_pattern(int n, const std::vector<std::pair<int, int>>& pairs, std::size_t count, const Options& options,
                   const char* name) {
  std::vector<std::size_t> counts;
  for (std::size_t t = 0; t < pairs.size(); ++t) counts.push_back(count + t % 3);  // uneven transfers
  Buffers<T> buffers(pairs, counts);
  Team team(n, options);
  for (int call = 0; call < 2; ++call) {
    buffers.reset();
    team.transfer(buffers.transfers);
    team.synchronize();
    INFO(name << " " << harness::type_name<T>() << " ranks " << n << " count " << count << " blocks " << options.blocks
              << " call " << call);
    REQUIRE(buffers.first_wrong() == -1);
  }
}


std::string error_of(const std::function<void()>& fn, ErrorCode& code) {
  try {
    fn();
  } catch (const chorus::Error& e) {
    code = e.code();
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("ring exchanges, pipelines, all pairs and local copies move every element, 2..8 ranks") {
  const std::size_t big = chorus::test::kSanitized ? 301 : 1001;  // float: 84 slots of 48 bytes per transfer
  for (int n = 2; n <= 8; ++n) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{13}, big}) {
      const Options options = small_fifo(1 + n % 3);
      check_pattern<float>(n, ring_exchange(n), count, options, "ring exchange");
      check_pattern<float>(n, pipeline(n), count, options, "pipeline");
      check_pattern<float>(n, all_pairs(n), count, options, "all pairs");
    }
  }
}

TEST_CASE("transfers of several element types, local copies alone, and count 0 everywhere") {
  const std::size_t count = chorus::test::kSanitized ? 203 : 777;
  for (int n : {2, 3, 5}) {
    check_pattern<std::int8_t>(n, all_pairs(n), count, small_fifo(2), "all pairs int8");
    check_pattern<double>(n, ring_exchange(n), count, small_fifo(3), "ring double");
    check_pattern<std::uint64_t>(n, pipeline(n), count, small_fifo(1), "pipeline uint64");
    check_pattern<std::int32_t>(n, {{0, 0}, {1, 1}, {0, 0}}, count, small_fifo(2), "local copies");
    check_pattern<float>(n, all_pairs(n), 0, small_fifo(2), "count 0");
  }
}

TEST_CASE("several transfers between one ordered pair share its FIFO in list order") {
  // Different counts, so a receiver that drained them in another order would put elements in the wrong buffer.
  const std::vector<std::pair<int, int>> pairs = {{0, 1}, {1, 0}, {0, 1}, {2, 1}, {0, 1}, {1, 0}};
  const std::vector<std::size_t> counts = {500, 17, 3, 250, 121, 0};
  Buffers<float> buffers(pairs, counts);
  Team team(3, small_fifo(2));
  team.transfer(buffers.transfers);
  team.synchronize();
  REQUIRE(buffers.first_wrong() == -1);
}

TEST_CASE("repeated transfer calls continue the counters, across the 32-bit wrap, mixed with other kernels") {
  const int n = 4;
  Team team(n, small_fifo(2));
  team.advance_counters_to(0xffffffe0u);  // a few dozen slots short of the wrap
  Buffers<float> ring(ring_exchange(n), std::vector<std::size_t>(static_cast<std::size_t>(n), 301));
  Buffers<float> pairs(all_pairs(n), std::vector<std::size_t>(static_cast<std::size_t>(n * n), 45));
  for (int call = 0; call < 4; ++call) {
    ring.reset();
    team.transfer(ring.transfers);
    team.synchronize();
    INFO("call " << call);
    REQUIRE(ring.first_wrong() == -1);
    pairs.reset();
    team.transfer(pairs.transfers);
    team.synchronize();
    REQUIRE(pairs.first_wrong() == -1);
    // A ring all_gather between p2p calls: its own FIFO and counters, untouched by p2p.
    std::vector<std::vector<float>> in(n, std::vector<float>(33, 1.0f)), out(n, std::vector<float>(33 * n));
    std::vector<const float*> ins;
    std::vector<float*> outs;
    for (int r = 0; r < n; ++r) {
      ins.push_back(in[static_cast<std::size_t>(r)].data());
      outs.push_back(out[static_cast<std::size_t>(r)].data());
    }
    team.all_gather<float>(ins, outs, 33, Algorithm::ring);
    team.synchronize();
    REQUIRE(out[3][33 * 4 - 1] == 1.0f);
  }
  // The counters of the FIFO 0 -> 1 went past 2^32 and wrapped.
  CHECK(team.p2p_counters(0, 0).sent[1] < 0x1000u);
  CHECK(team.p2p_counters(1, 0).received[0] == team.p2p_counters(0, 0).sent[1]);
}

TEST_CASE("seeded delays do not change what arrives") {
  for (std::uint32_t seed : {1u, 7u, 1234u}) {
    const std::size_t count = chorus::test::kSanitized ? 97 : 400;
    check_pattern<float>(4, ring_exchange(4), count, small_fifo(2, seed), "ring, delayed");
    check_pattern<float>(3, all_pairs(3), count, small_fifo(3, seed), "all pairs, delayed");
  }
}

TEST_CASE("a rank that skips a transfer call: its peer's wait is bounded and names who waited for whom") {
  // 400 floats = 34 slots of 48 bytes for one block: more than its 4 slots hold, so the sender must wait
  // for slot 4 (step 4) to be freed.
  with_timeout_ms("300", [] {
    {
      Buffers<float> buffers({{0, 1}}, {400});
      Team team(2, small_fifo(1));
      ErrorCode code{};
      const std::string what = error_of([&] { team.transfer(buffers.transfers, {}, {true, false}); team.synchronize(); }, code);
      INFO(what);
      CHECK(code == ErrorCode::timeout);
      CHECK(what.find("cuda::twin::Team::transfer on rank 0: p2p block 0 waited 300 ms for rank 1 (p2p FIFO: free slot at the "
                      "receiver, step 4): expected 1, saw 0") != std::string::npos);
      // The team is broken afterwards.
      const std::string next = error_of([&] { team.transfer(buffers.transfers); team.synchronize(); }, code);
      CHECK(code == ErrorCode::peer_failed);
      CHECK(next.find("an earlier call failed") != std::string::npos);
    }
    {
      Buffers<float> buffers({{0, 1}, {1, 2}}, {5, 5});
      Team team(3, small_fifo(1));
      ErrorCode code{};
      const std::string what = error_of([&] { team.transfer(buffers.transfers, {}, {false, true, true}); team.synchronize(); }, code);
      INFO(what);
      CHECK(code == ErrorCode::timeout);
      CHECK(what.find("on rank 1: p2p block 0 waited 300 ms for rank 0 (p2p FIFO: piece from the sender, step 0)") !=
            std::string::npos);
    }
  });
}

TEST_CASE("pairwise all_to_all equals the staged one and the definition, in place or not") {
  const std::size_t big = chorus::test::kSanitized ? 150 : 700;
  for (int n = 1; n <= 8; ++n) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{37}, big}) {
      for (bool in_place : {false, true}) {
        Team team(n, small_fifo(1 + n % 3, n == 5 ? 11u : 0u));
        std::vector<std::vector<float>> in(n), staged(n), pairwise(n);
        for (int r = 0; r < n; ++r) {
          in[static_cast<std::size_t>(r)].resize(count * static_cast<std::size_t>(n));
          for (std::size_t i = 0; i < in[static_cast<std::size_t>(r)].size(); ++i) {
            in[static_cast<std::size_t>(r)][i] = static_cast<float>(r * 100000 + static_cast<int>(i));
          }
        }
        for (auto [algorithm, out] : {std::pair{KernelAlgorithm::one_shot, &staged}, std::pair{KernelAlgorithm::pairwise, &pairwise}}) {
          std::vector<const float*> ins;
          std::vector<float*> outs;
          for (int r = 0; r < n; ++r) {
            (*out)[static_cast<std::size_t>(r)] = in_place ? in[static_cast<std::size_t>(r)]
                                                           : std::vector<float>(count * static_cast<std::size_t>(n), -1.0f);
            outs.push_back((*out)[static_cast<std::size_t>(r)].data());
            ins.push_back(in_place ? outs.back() : in[static_cast<std::size_t>(r)].data());
          }
          team.collective_with<float>(Collective::all_to_all, ins, outs, count, ReduceOp::sum, 0, algorithm);
          team.synchronize();
        }
        for (int r = 0; r < n; ++r) {
          INFO("ranks " << n << " count " << count << " in place " << in_place << " rank " << r);
          REQUIRE(pairwise[static_cast<std::size_t>(r)] == staged[static_cast<std::size_t>(r)]);
          for (int k = 0; k < n; ++k) {  // block k of rank r's output is block r of rank k's input
            for (std::size_t i = 0; i < count; ++i) {
              const std::size_t at = static_cast<std::size_t>(k) * count + i;
              if (pairwise[static_cast<std::size_t>(r)][at] != in[static_cast<std::size_t>(k)][static_cast<std::size_t>(r) * count + i]) {
                FAIL("block " << k << " element " << i);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("bad transfer calls are refused with the call, the rank and the value") {
  Team team(3);
  std::vector<float> a(16), b(16), c(16);
  const std::string call = "cuda::twin::Team::transfer on rank ";
  const auto pointer = [](const void* p) { return chorus::detail::concat(p); };
  const auto refused = [&](std::vector<Transfer<float>> transfers, ErrorCode expected, const std::string& text) {
    ErrorCode code{};
    const std::string what = error_of([&] { team.transfer(transfers); }, code);
    INFO(what);
    CHECK(code == expected);
    CHECK(what.find(call + text) != std::string::npos);
  };
  refused({{0, 3, a.data(), b.data(), 4}}, ErrorCode::invalid_argument, "0: transfer 0 sends to rank 3, not a rank of 3");
  refused({{0, 1, a.data(), b.data(), 4}, {-1, 1, a.data(), c.data(), 4}}, ErrorCode::invalid_argument,
          "-1: transfer 1 sends from rank -1, not a rank of 3");
  refused({{2, 1, nullptr, b.data(), 4}}, ErrorCode::invalid_argument, "2: transfer 0: null send buffer with count 4");
  refused({{2, 1, a.data(), nullptr, 4}}, ErrorCode::invalid_argument, "1: transfer 0: null recv buffer with count 4");
  refused({{0, 1, a.data(), b.data(), SIZE_MAX / 2}}, ErrorCode::invalid_argument, "0: transfer 0: count " +
                                                                                     std::to_string(SIZE_MAX / 2) + " overflows");
  refused({{0, 1, a.data(), b.data(), 8}, {2, 1, c.data(), b.data() + 4, 8}}, ErrorCode::invalid_argument,
          "1: transfer 0's recv buffer " + pointer(b.data()) + " overlaps the recv buffer of transfer 1");
  refused({{0, 1, a.data(), b.data(), 8}, {1, 2, b.data() + 7, c.data(), 8}}, ErrorCode::invalid_argument,
          "1: transfer 0's recv buffer " + pointer(b.data()) + " overlaps the send buffer of transfer 1");
  std::vector<Transfer<float>> too_many;
  for (int k = 0; k <= chorus::cuda::kernel::kMaxRanks; ++k) too_many.push_back({0, 1, a.data(), b.data() + k % 2, 0});
  refused(too_many, ErrorCode::invalid_argument, "0: transfer 8 is this rank's send number 9; one call takes at most 8 sends");
  // Null buffers with count 0 are fine, and nothing above ran: the team still works.
  team.transfer<float>({{0, 1, nullptr, nullptr, 0}, {1, 2, a.data(), c.data(), 16}});
  team.synchronize();
  CHECK(c == a);
  ErrorCode code{};
  const std::string what = error_of([&] { team.transfer<float>({}, {}, {true}); }, code);
  CHECK(code == ErrorCode::invalid_argument);
  CHECK(what.find("takes_part must be empty or one per rank, got 1") != std::string::npos);
  // pairwise is all_to_all only.
  const std::string other = error_of([&] {
    team.collective_with<float>(Collective::all_gather, {a.data(), b.data(), c.data()}, {a.data(), b.data(), c.data()}, 1, ReduceOp::sum, 0,
                                KernelAlgorithm::pairwise);
  }, code);
  CHECK(code == ErrorCode::unsupported);
  CHECK(other.find("no pairwise kernel for all_gather") != std::string::npos);
}

}  // namespace test_twin_p2p
